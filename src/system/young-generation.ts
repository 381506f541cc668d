import { setFlagsFromString } from 'node:v8';

// V8 grows the young generation (new space) twofold whenever a scavenge finds most of it surviving, as
// it does while a start loads ~480 modules and builds the routes: by the first answer it is 16 MiB
// (two 8 MiB semi-spaces), pages that stay resident while the box idles. Held at 1 MiB semi-spaces
// for the start and let grow again once posd answers, a busy box gets the young generation V8 would
// give it and an idle one keeps ~10 MiB less (docs/decisions/0105-young-generation-at-start.md).
// The flag is read at each growth decision, so setting it at run time takes effect.

/** From src/posd.ts, before the program's modules load. */
export function holdYoungGeneration(): void {
  setFlagsFromString('--semi-space-growth-factor=1');
}

/** Once the daemon (or central-front) listens: V8's own default again. */
export function releaseYoungGeneration(): void {
  setFlagsFromString('--semi-space-growth-factor=2');
}
