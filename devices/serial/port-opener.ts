/**
 * How a serial transport gets a port. Following node-serialport's binding contract, the opener is
 * injected: production uses the real binding, tests a pseudo-terminal pair or the mock binding.
 */
import { createRequire } from 'node:module';
import type { SerialPort, SerialPortMock } from 'serialport';
import type { PortStream } from './serial-link.js';

type SerialPortModule = typeof import('serialport');
let loaded: SerialPortModule | undefined;
/**
 * serialport (and its native binding) is loaded by the first port opened, not when posd starts: most
 * boxes have no serial terminal. It is CommonJS, so require gives the very copy `import` would.
 */
function serialport(): SerialPortModule {
  return (loaded ??= createRequire(import.meta.url)('serialport') as SerialPortModule);
}

export interface PortOpenOptions {
  path: string;
  /** 115200 by default; frames are always 8 data bits, no parity, 1 stop bit. */
  baudRate?: number;
}

export type PortOpener = (opts: PortOpenOptions) => Promise<PortStream>;

/** Rejections carry `{disconnected: true}` when the device is absent, per node-serialport. */
function openWith(port: SerialPort | SerialPortMock): Promise<PortStream> {
  return new Promise((resolve, reject) => port.open((err) => (err ? reject(Object.assign(err, { disconnected: true as const })) : resolve(port))));
}

export const openSerialPort: PortOpener = ({ path, baudRate = 115_200 }) =>
  openWith(new (serialport().SerialPort)({ path, baudRate, dataBits: 8, parity: 'none', stopBits: 1, autoOpen: false }));

/** Opens a port on @serialport/binding-mock; create it first with `MockBinding.createPort(path)`. */
export const openMockSerialPort: PortOpener = ({ path, baudRate = 115_200 }) =>
  openWith(new (serialport().SerialPortMock)({ path, baudRate, dataBits: 8, parity: 'none', stopBits: 1, autoOpen: false }));

/**
 * The mock binding instance SerialPortMock really uses. Importing @serialport/binding-mock from
 * ESM yields a second copy (dual package), whose createPort the mock ports would never see.
 */
export const mockSerialBinding: Pick<typeof SerialPortMock.binding, 'createPort' | 'reset'> = {
  createPort: (...args) => serialport().SerialPortMock.binding.createPort(...args),
  reset: () => serialport().SerialPortMock.binding.reset(),
};
