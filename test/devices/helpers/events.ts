import type { EventEmitter } from 'node:events';

/** Resolves with the next emission of `event` that satisfies `pred`. */
export function next<T = unknown>(emitter: EventEmitter | { on: Function; off: Function }, event: string, pred: (v: T) => boolean = () => true): Promise<T> {
  return new Promise((resolve) => {
    const on = (v: T) => {
      if (!pred(v)) return;
      (emitter as EventEmitter).off(event, on);
      resolve(v);
    };
    (emitter as EventEmitter).on(event, on);
  });
}

/** Collects every emission of `event` into an array. */
export function collect<T = unknown>(emitter: EventEmitter | { on: Function }, event: string): T[] {
  const out: T[] = [];
  (emitter as EventEmitter).on(event, (v: T) => out.push(v));
  return out;
}
