/**
 * NexoCrypto (Adyen's Terminal API, local) through the library's own module: AES-256-CBC with a key,
 * IV and HMAC key derived from the passphrase (PBKDF2), and an HMAC-SHA256 of the clear message.
 * Only `lib/src/security/nexoCrypto.js` is loaded (~40 ms, ~7 MiB), never the package's index
 * (~1.2-1.8 s, ~55 MiB at load 10 here; docs/decisions/0280-nexo-terminals.md). Loaded at first use.
 */
import { createRequire } from 'node:module';

/** The shared key, as configured on the terminal (Customer Area: "Encryption key"). */
export interface NexoKey {
  keyIdentifier: string;
  passphrase: string;
  keyVersion: number;
}

export interface SecurityTrailer {
  AdyenCryptoVersion: number;
  KeyIdentifier: string;
  KeyVersion: number;
  Nonce: string;
  Hmac: string;
}

/** A secured message: the clear header, the encrypted body, the trailer. */
export interface SecuredMessage {
  MessageHeader: object;
  NexoBlob: string;
  SecurityTrailer: SecurityTrailer;
}

interface LibraryKey {
  AdyenCryptoVersion: number;
  KeyIdentifier: string;
  KeyVersion: number;
  Passphrase: string;
}
interface NexoCryptoClass {
  new (): { decrypt(msg: SecuredMessage, key: LibraryKey): string };
  encrypt(header: unknown, json: string, key: LibraryKey): SecuredMessage;
}

const requireHere = createRequire(import.meta.url);
let lib: { NexoCrypto: NexoCryptoClass; instance: InstanceType<NexoCryptoClass> } | undefined;

interface KeyGenerator {
  deriveKeyMaterial(passphrase: string): unknown;
}

/**
 * The library derives the key material again for every message: PBKDF2-SHA1, 4,000 iterations over
 * 640 bytes, synchronous, 15-70 ms of the event loop each time (docs/decisions/0280-nexo-terminals.md),
 * twice per round trip. The material depends on the passphrase alone, so it is derived once per
 * passphrase and kept (the passphrase itself is held in memory anyway). The library's NexoCrypto calls
 * the generator through its module object, so replacing the static method is enough.
 */
function deriveOnce(gen: KeyGenerator): void {
  const derive = gen.deriveKeyMaterial.bind(gen);
  const cache = new Map<string, unknown>();
  gen.deriveKeyMaterial = (passphrase: string) => {
    let material = cache.get(passphrase);
    if (material === undefined) {
      if (cache.size >= 64) cache.clear();
      material = derive(passphrase);
      cache.set(passphrase, material);
    }
    return material;
  };
}

function library() {
  if (!lib) {
    deriveOnce((requireHere('@adyen/api-library/lib/src/security/nexoDerivedKeyGenerator.js') as { default: KeyGenerator }).default);
    const NexoCrypto = (requireHere('@adyen/api-library/lib/src/security/nexoCrypto.js') as { default: NexoCryptoClass }).default;
    lib = { NexoCrypto, instance: new NexoCrypto() };
  }
  return lib;
}

/** The only version Adyen's terminals speak. */
export const ADYEN_CRYPTO_VERSION = 1;

/** Why a secured message was refused; `wrongKey` when it names another key or its HMAC fails. */
export class NexoCryptoError extends Error {
  constructor(
    message: string,
    readonly wrongKey: boolean,
  ) {
    super(message);
    this.name = 'NexoCryptoError';
  }
}

function libraryKey(key: NexoKey): LibraryKey {
  return { AdyenCryptoVersion: ADYEN_CRYPTO_VERSION, KeyIdentifier: key.keyIdentifier, KeyVersion: key.keyVersion, Passphrase: key.passphrase };
}

/** Encrypts one clear message (`{SaleToPOIRequest: {...}}` or `{SaleToPOIResponse: {...}}`) under `key`. */
export function sealNexo(clear: Record<string, { MessageHeader: object }>, key: NexoKey): Record<string, SecuredMessage> {
  const [outer, body] = Object.entries(clear)[0];
  return { [outer]: library().NexoCrypto.encrypt(body.MessageHeader, JSON.stringify(clear), libraryKey(key)) };
}

/**
 * Decrypts one secured message and checks it is under `key`. The library checks the HMAC only; the
 * key identifier and version are checked here, so a terminal set up with another key is named as such.
 */
export function openNexo(secured: unknown, key: NexoKey): Record<string, unknown> {
  const outer = secured && typeof secured === 'object' ? Object.entries(secured as Record<string, unknown>)[0] : undefined;
  const msg = outer?.[1] as Partial<SecuredMessage> | undefined;
  if (!msg || typeof msg.NexoBlob !== 'string' || !msg.SecurityTrailer) throw new NexoCryptoError('not a secured nexo message', false);
  const t = msg.SecurityTrailer;
  if (t.KeyIdentifier !== key.keyIdentifier || t.KeyVersion !== key.keyVersion) {
    throw new NexoCryptoError(`message under key ${t.KeyIdentifier} version ${t.KeyVersion}, not ${key.keyIdentifier} version ${key.keyVersion}`, true);
  }
  let text: string;
  try {
    text = library().instance.decrypt(msg as SecuredMessage, libraryKey(key));
  } catch (err) {
    // A bad padding (another passphrase) or a failed HMAC: either way, not our key.
    throw new NexoCryptoError(`cannot open the message: ${(err as Error).message}`, true);
  }
  const clear = JSON.parse(text) as Record<string, unknown>;
  if (!clear || typeof clear !== 'object' || !(outer![0] in clear)) throw new NexoCryptoError('the clear message is not the one its envelope names', false);
  return clear;
}
