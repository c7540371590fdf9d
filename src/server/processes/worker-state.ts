/**
 * A worker process's (HostProcess) and a model slot's (ModelSlot) transition tables. A kill does
 * not change a process's state (killedBy says it). A slot that dies in any live state is failed,
 * unless it was ready or stopping and the server stopped it.
 */
import { StateMachine } from '../../util/state-machine';

export type ProcessState = 'starting' | 'serving' | 'draining' | 'exited';
export type WorkerState = 'starting' | 'loading' | 'ready' | 'stopping' | 'stopped' | 'failed';

const kProcessNext: Readonly<Record<ProcessState, readonly ProcessState[]>> = {
  starting: ['serving', 'exited'],
  serving: ['draining', 'exited'],
  draining: ['exited'],
  exited: [],
};

const kWorkerNext: Readonly<Record<WorkerState, readonly WorkerState[]>> = {
  starting: ['loading', 'stopping', 'failed'],
  loading: ['ready', 'stopping', 'failed'],
  ready: ['stopping', 'stopped', 'failed'],
  stopping: ['stopped', 'failed'],
  stopped: [],
  failed: [],
};

export const processStates = (what: () => string) => new StateMachine<ProcessState>(what, 'starting', kProcessNext);
export const workerStates = (what: () => string, initial: WorkerState) =>
  new StateMachine<WorkerState>(what, initial, kWorkerNext);
