/**
 * The gRPC listener's bounds on calls, run when a call's headers arrive: at most `maxStreams` in
 * flight, and a first message within `firstMessageMs` (as HTTP's request_timeout 408). They bound
 * what a client can make the server hold before any token is checked.
 */
import {
  type ServerInterceptingCallInterface,
  type ServerInterceptor,
  ResponderBuilder,
  ServerInterceptingCall,
  ServerListenerBuilder,
  status as Status,
} from '@grpc/grpc-js';

export interface StreamLimits {
  maxStreams: number;
  firstMessageMs: number;
}

export function streamLimits(limits: StreamLimits): ServerInterceptor {
  let inFlight = 0;
  return (_method, call: ServerInterceptingCallInterface) => {
    if (inFlight >= limits.maxStreams) {
      const refuse = new ServerListenerBuilder()
        .withOnReceiveMetadata(() =>
          call.sendStatus({
            code: Status.RESOURCE_EXHAUSTED,
            details: `the server has ${limits.maxStreams} gRPC calls in flight, its limit; retry later`,
          }),
        )
        .build();
      return new ServerInterceptingCall(call, new ResponderBuilder().withStart((next) => next(refuse)).build());
    }
    inFlight++;
    let counted = true;
    const release = () => {
      if (!counted) return;
      counted = false;
      inFlight--;
      clearTimeout(firstMessage);
    };
    const firstMessage = setTimeout(() => {
      release();
      call.sendStatus({
        code: Status.DEADLINE_EXCEEDED,
        details: `no request message arrived within ${limits.firstMessageMs} ms of the call's headers`,
      });
    }, limits.firstMessageMs);
    const arrived = () => clearTimeout(firstMessage);
    const listener = new ServerListenerBuilder()
      .withOnReceiveMessage((message, next) => {
        arrived();
        next(message);
      })
      .withOnReceiveHalfClose((next) => {
        arrived();
        next();
      })
      .withOnCancel(release)
      .build();
    const responder = new ResponderBuilder()
      .withStart((next) => next(listener))
      .withSendStatus((status, next) => {
        release();
        next(status);
      })
      .build();
    return new ServerInterceptingCall(call, responder);
  };
}
