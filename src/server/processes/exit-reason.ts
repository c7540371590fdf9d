/**
 * Why a worker process ended, decided once, by whoever caused it. The status code its requests get
 * follows from the reason alone: 507 only on memory evidence, never for a kill the server made.
 */
import { type ErrorCode, MmeError } from '../../errors';
import { UNHANDLED_REJECTION_EXIT_CODE } from '../../unhandled-rejection';

/**
 * oom: a SIGKILL the server did not send (the OOM killer) or V8's exhausted heap; memory-limit: the
 * model's memory_limit_mb ended it (its cgroup's oom_kill count rose, or the server's memory watch).
 */
export type ExitReason =
  | 'stopped'
  | 'timeout-kill'
  | 'protocol-error'
  | 'memory-limit'
  | 'oom'
  | 'unhandled-rejection'
  | 'crashed';

/** What the server did to a worker; set before the signal is sent, so the exit finds it. */
export type KillReason = Extract<ExitReason, 'stopped' | 'timeout-kill' | 'protocol-error' | 'memory-limit'>;

export interface WorkerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  reason: ExitReason;
  /** The model whose run or load past its timeout made the server kill the process: in a shared host, maybe not the request's. */
  causedBy: string | null;
  /** A shared host's models that had a batch running when it ended: a crash may be any one's doing. */
  runningModels?: readonly string[];
}

interface ExitEvidence extends Pick<WorkerExit, 'code' | 'signal'> {
  killedBy: KillReason | null;
  /** V8 printed "JavaScript heap out of memory" before the process ended. */
  heapExhausted: boolean;
  /** The model's cgroup counted an OOM kill for this exit. */
  limitOom?: boolean;
}

export function exitReason(e: ExitEvidence): ExitReason {
  if (e.killedBy) return e.killedBy;
  if (e.limitOom) return 'memory-limit';
  // 137 = 128 + SIGKILL, as a wrapper that did not exec reports it.
  if (e.signal === 'SIGKILL' || e.code === 137 || e.heapExhausted) return 'oom';
  if (e.code === UNHANDLED_REJECTION_EXIT_CODE) return 'unhandled-rejection';
  return 'crashed';
}

export function describeExit(exit: Pick<WorkerExit, 'code' | 'signal'>): string {
  if (exit.signal) return `was killed by ${exit.signal}`;
  if (exit.code === UNHANDLED_REJECTION_EXIT_CODE)
    return `exited on a promise rejection nobody handled (code ${exit.code}; its log has the report)`;
  return `exited with code ${exit.code}`;
}

/** The error a request that was running on the worker gets. */
export function runningRequestError(model: string, exit: WorkerExit, timeoutSeconds: number): MmeError {
  if (exit.reason === 'timeout-kill')
    return new MmeError(
      'MME_ERR_WORKER_TIMEOUT',
      exit.causedBy !== null && exit.causedBy !== model
        ? `The shared host running this request of model ${model} was stopped because model ${exit.causedBy} ran past its timeout there (a request past its response timeout, or a load past model_load_timeout); model ${model} is being loaded in another host.`
        : `Model ${model} did not answer within ${timeoutSeconds} s (default_response_timeout_seconds); its worker was stopped and is being replaced.`,
    );
  const also = alsoRunning(model, exit);
  return exitError(exit, `The worker of model ${model}`, 'while running this request', 'MME_ERR_WORKER_DIED', also);
}

/** The error a load gets when its worker ends before reporting Loaded. */
export function loadExitError(workerId: string, exit: WorkerExit): MmeError {
  const also = ' See the server log for its output.';
  return exitError(exit, `worker ${workerId}`, 'while loading the model', 'MME_ERR_LOAD_FAILED', also);
}

/** What a run and a load share: 507 only on memory evidence; `also` ends a crash's or an OOM's message. */
function exitError(exit: WorkerExit, worker: string, during: string, crashed: ErrorCode, also: string): MmeError {
  const what = `${worker} ${describeExit(exit)} ${during}`;
  const known: Partial<Record<ExitReason, [ErrorCode, string]>> = {
    oom: [
      'MME_ERR_INSUFFICIENT_MEMORY',
      `${what}: out of memory (the kernel's OOM killer, or an exhausted JavaScript heap).${also}`,
    ],
    'memory-limit': [
      'MME_ERR_INSUFFICIENT_MEMORY',
      `${what}: the model went past its memory_limit_mb and its worker was stopped (the model's other workers and its neighbours were not); it restarts as after a crash. Raise memory_limit_mb (GET /models/{name} shows it), or send smaller requests.`,
    ],
    stopped: [
      'MME_ERR_SHUTTING_DOWN',
      `${worker} was stopped (unload, eviction, scale-down or server shutdown) ${during}.`,
    ],
    'protocol-error': [
      'MME_ERR_WORKER_PROTOCOL',
      `${worker} sent a malformed or oversized frame ${during}; it was stopped. The server log has the details.`,
    ],
  };
  const [code, message] = known[exit.reason] ?? [crashed, `${what}.${also}`];
  return new MmeError(code, message);
}

/** Who else had a request running in the same shared host: the exit may be their doing. */
function alsoRunning(model: string, exit: WorkerExit): string {
  const others = (exit.runningModels ?? []).filter((m) => m !== model);
  if (others.length === 0) return '';
  const named = others.slice(0, 5).join(', ') + (others.length > 5 ? ` and ${others.length - 5} more` : '');
  return ` It was a shared host, also running requests of ${others.length === 1 ? 'model' : 'models'} ${named}; which of them caused it is not known.`;
}
