/**
 * Bearer tokens, whichever door a request came through: the management API's management_token
 * (src/http/guards.ts) and the data plane's inference_token, which HTTP's listener guards and gRPC's
 * calls check alike (InferenceToken).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { MmeError } from '../errors';

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * Whether an Authorization value is "Bearer <one of tokens>", in constant time: both sides are
 * hashed first, so lengths never differ, and every token is compared, so the time says nothing
 * about which one matched or how many there are.
 */
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

/**
 * inference_token: the data plane (every invoke and the OIP metadata, over HTTP and gRPC; health
 * checks stay open) needs one of its tokens. Several let a token be rotated without a moment when
 * clients holding the old or the new one are refused.
 */
export class InferenceToken {
  readonly #matches: (authorization: string | undefined) => boolean;

  /** `refused` counts each refusal (the UnauthorizedRequests metric). */
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
