/// <reference path="./accel-plugin-events.d.ts" />
/// <reference path="./accel-plugin-types.d.ts" />
declare module 'accel:plugin/dma@0.2.0' {
  export type Error = import('accel:plugin/types@0.2.0').Error;
  export type Event = import('accel:plugin/events@0.2.0').Event;
  
  export class Buffer implements Disposable {
    /**
     * This type does not have a public constructor.
     */
    private constructor();
    /**
    * Allocates zeroed, page-aligned memory of at least `size` bytes (rounded up to
    * whole pages). Fails with `out-of-memory` past the plugin's DMA grant.
    */
    static allocate(size: bigint): Buffer;
    /**
    * The size in bytes (a whole number of pages).
    */
    size(): bigint;
    /**
    * The device address, once a device shim has mapped the buffer.
    */
    ioAddress(): bigint | undefined;
    /**
    * Copies out `len` bytes at `offset`; `len` is at most 1 MiB per call.
    */
    read(offset: bigint, len: number): Uint8Array;
    /**
    * Copies `data` in at `offset`; at most 1 MiB per call.
    */
    write(offset: bigint, data: Uint8Array): void;
    /**
    * Reads the 8-byte-aligned little-endian word at `offset` on the host until
    * `value & mask == expected` or the timeout (capped by the call's deadline).
    */
    poll64(offset: bigint, mask: bigint, expected: bigint, timeoutNs: bigint): bigint;
    /**
    * An event that completes when the word at `offset` has `value & mask == expected`:
    * the host watches it, so work a device signals by writing memory (a done flag, a
    * status line) can be waited on like any other completion.
    */
    watch64(offset: bigint, mask: bigint, expected: bigint): Event;
    [Symbol.dispose](): void;
  }
}
