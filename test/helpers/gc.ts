import v8 from 'node:v8';
import vm from 'node:vm';

/** A full garbage collection, in a test process not started with --expose-gc. */
export function collectGarbage(): void {
  v8.setFlagsFromString('--expose-gc');
  (vm.runInNewContext('gc') as () => void)();
}
