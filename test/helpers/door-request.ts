/** A door as a test writes one, to drive the gateway on its own: what it was asked for and what it was given back. */
import type { MmeError } from '../../src/errors';
import type { DoorGuard, DoorRequest, DoorSignal, ModelAnswer, OipPayload, Payload } from '../../src/gateway/door';

export interface TestDoor {
  request: DoorRequest;
  /** The answer (null for a request answered without a model) or the failure the door was given. */
  outcome: Promise<ModelAnswer | MmeError | null>;
  /** The parts the gateway asked for, in order. */
  asked: string[];
}

export interface TestRequest {
  guard: DoorGuard;
  /** null: answered without a model. */
  model?: string | null;
  requestId?: string;
  headers?: DoorRequest['headers'];
  timeout?: unknown;
  priority?: unknown;
  deadlineMs?: number;
  signal?: DoorSignal;
  payload?: Partial<Payload> | OipPayload;
  /** What fail() says the client saw; the status by default. */
  shown?: (e: MmeError) => string;
  /** A refusal of the door's own, thrown by target(). */
  refusal?: Error;
  /** answer() throws this (a door that cannot encode the answer). */
  answerFault?: Error;
}

export function testDoor(t: TestRequest): TestDoor {
  const asked: string[] = [];
  let settle!: (outcome: ModelAnswer | MmeError | null) => void;
  const outcome = new Promise<ModelAnswer | MmeError | null>((resolve) => {
    settle = resolve;
  });
  const request: DoorRequest = {
    requestId: t.requestId ?? 'r',
    guard: t.guard,
    get knock() {
      asked.push('knock');
      return { operation: '/models/m/invoke', host: 'localhost', authorization: undefined, dataPlane: true };
    },
    headers: t.headers ?? {},
    where: 'POST /models/:name/invoke',
    signal: t.signal ?? { aborted: false, onabort: null },
    timeout: t.timeout,
    priority: t.priority,
    deadlineMs: t.deadlineMs,
    target() {
      asked.push('target');
      if (t.refusal !== undefined) throw t.refusal;
      return t.model === undefined ? 'm' : t.model;
    },
    async body() {
      asked.push('body');
      return { headers: {}, contentType: 'text/plain', accept: 'text/plain', body: Buffer.from('x'), ...t.payload };
    },
    answer(a) {
      asked.push('answer');
      if (t.answerFault !== undefined) throw t.answerFault;
      settle(a);
    },
    fail(e) {
      asked.push('fail');
      settle(e);
      return t.shown?.(e) ?? e.status;
    },
  };
  return { request, outcome, asked };
}

/** The status a door was given: its answer's, or its failure's. */
export function statusGiven(outcome: ModelAnswer | MmeError | null): number {
  return outcome === null ? 200 : outcome.status;
}
