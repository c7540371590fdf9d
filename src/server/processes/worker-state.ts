/**
 * The two transition tables below the registration (registration.ts has the one above): a worker
 * process's (HostProcess: a dedicated worker or a shared host), and a slot's (ModelSlot: a model's
 * worker, the one slot of a dedicated worker or one of a shared host's). Each runs on the shared
 * StateMachine (util/state-machine.ts), whose `to()` refuses any move its table does not list.
 *
 * A process:
 *
 *   starting ──Started──▶ serving ──recycle──▶ draining ──exit──▶ exited
 *
 * Any live process may exit (killed, stopped, crashed): starting or serving go to exited directly.
 * A kill does not change the state; `killed` says the server has begun to end it.
 *
 * A model's worker (describe shows these, upper-cased):
 *
 *   starting ──assigned, started──▶ loading ──Loaded──▶ ready ──retire──▶ stopping ──exit/Unloaded──▶ stopped
 *      └──── load failed, load timeout, death ─────────────────────────────────────────────────────▶ failed
 *
 * A worker retired before it loaded goes to stopping from starting or loading; one that dies or is
 * killed in any live state is failed, unless it was stopping or ready and the server stopped it.
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
