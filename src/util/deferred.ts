/** Promise.withResolvers, which Node 20 lacks: a promise settled from outside its executor. */
export function deferred<T>() {
  const d = {} as { promise: Promise<T>; resolve: (value: T) => void; reject: (reason: Error) => void };
  d.promise = new Promise<T>((resolve, reject) => Object.assign(d, { resolve, reject }));
  return d;
}
export type Deferred<T> = ReturnType<typeof deferred<T>>;
