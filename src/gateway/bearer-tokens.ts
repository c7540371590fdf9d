/** Bearer tokens, whichever door: management_token and the data plane's inference_token. */
import { createHash, timingSafeEqual } from 'node:crypto';
import { MmeError } from '../errors';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Constant time: both sides are hashed, and every token is compared, so the time says nothing of which matched. */
export function bearerMatcher(tokens: readonly string[]): (authorization: string | undefined) => boolean {
  const expected = tokens.map(digest);
  return (authorization) => {
    const m = /^Bearer\s+(.+)$/i.exec(authorization ?? '');
    if (!m) return false;
    const sent = digest(m[1].trim());
    let matched = false;
    for (const e of expected) matched = timingSafeEqual(sent, e) || matched;
    return matched;
  };
}

/** Several tokens let one be rotated without a moment when clients holding the old or the new one are refused. */
export class InferenceToken {
  readonly #matches: (authorization: string | undefined) => boolean;

  constructor(
    tokens: readonly string[],
    private readonly refused: () => void,
  ) {
    this.#matches = bearerMatcher(tokens);
  }

  /** Throws 401 (WWW-Authenticate: Bearer) unless `authorization` carries one of the tokens; never says which was sent. */
  check(authorization: string | undefined, where: 'Authorization header' | 'authorization metadata'): void {
    if (this.#matches(authorization)) return;
    this.refused();
    throw new MmeError(
      'MME_ERR_UNAUTHORIZED',
      `The inference API needs a bearer token: send the ${where} "Bearer <inference_token>".`,
      { headers: { 'WWW-Authenticate': 'Bearer' } },
    );
  }
}
