declare module 'accel:plugin/types@0.2.0' {
  /**
   * Why a call failed. The set only grows: a code never changes meaning.
   * # Variants
   * 
   * ## `"unsupported"`
   * 
   * The plugin (or the device behind it) does not implement this call.
   * ## `"invalid-argument"`
   * 
   * An argument is malformed, out of range or of the wrong kind.
   * ## `"not-found"`
   * 
   * The token, handle, id or name does not exist.
   * ## `"busy"`
   * 
   * The device or object is in use (for example opened exclusively elsewhere).
   * ## `"no-space"`
   * 
   * A fixed-size resource is exhausted (contexts, slots, IOVA space).
   * ## `"permission-denied"`
   * 
   * The plugin's grants do not cover this device, region or operation.
   * ## `"timeout"`
   * 
   * A wait or poll ran past its timeout.
   * ## `"out-of-memory"`
   * 
   * A memory allocation or grant limit was reached.
   * ## `"device-error"`
   * 
   * The device or driver reported a failure.
   * ## `"not-initialized"`
   * 
   * The plugin was called before `initialize` succeeded.
   * ## `"already-exists"`
   * 
   * The object already exists (for example a range that is already mapped).
   * ## `"internal"`
   * 
   * Anything else; the message says what.
   */
  export type ErrorCode = 'unsupported' | 'invalid-argument' | 'not-found' | 'busy' | 'no-space' | 'permission-denied' | 'timeout' | 'out-of-memory' | 'device-error' | 'not-initialized' | 'already-exists' | 'internal';
  /**
   * The error every fallible call returns: a stable code and a message for people.
   */
  export interface Error {
    code: ErrorCode,
    message: string,
  }
  /**
   * A 128-bit identifier (AFU id, xclbin uuid), as two 64-bit halves.
   */
  export interface Guid {
    high: bigint,
    low: bigint,
  }
  /**
   * A PCI address: segment (domain), bus, device and function.
   */
  export interface BusAddress {
    segment: number,
    bus: number,
    device: number,
    'function': number,
  }
  /**
   * The two object kinds of the OPAE model.
   * # Variants
   * 
   * ## `"device"`
   * 
   * A whole card (for DFL: the FPGA management engine).
   * ## `"accelerator"`
   * 
   * An accelerator function the application opens and drives (for DFL: a port).
   */
  export type ObjectType = 'device' | 'accelerator';
  /**
   * Whether an accelerator is free to open.
   * # Variants
   * 
   * ## `"unassigned"`
   * 
   * ## `"assigned"`
   */
  export type AcceleratorState = 'unassigned' | 'assigned';
  /**
   * How an accelerator is opened.
   * # Variants
   * 
   * ## `"shared"`
   * 
   * Other openers may hold it at the same time.
   * ## `"exclusive"`
   * 
   * No other opener may hold it; opening fails with `busy` otherwise.
   */
  export type OpenMode = 'shared' | 'exclusive';
}
