/// <reference path="./accel-plugin-types.d.ts" />
declare module 'accel:plugin/mmio@0.2.0' {
  export type Error = import('accel:plugin/types@0.2.0').Error;
  /**
   * The width of a register access.
   * # Variants
   * 
   * ## `"bits32"`
   * 
   * ## `"bits64"`
   */
  export type AccessWidth = 'bits32' | 'bits64';
  /**
   * One write of a batch.
   */
  export interface RegisterWrite {
    offset: bigint,
    value: bigint,
    width: AccessWidth,
  }
  
  export class Region implements Disposable {
    /**
     * This type does not have a public constructor.
     */
    private constructor();
    /**
    * The size of the region in bytes.
    */
    size(): bigint;
    read32(offset: bigint): number;
    read64(offset: bigint): bigint;
    write32(offset: bigint, value: number): void;
    write64(offset: bigint, value: bigint): void;
    /**
    * Performs the writes in order, stopping at the first that fails; one host call
    * instead of one per register.
    */
    writeBatch(writes: Array<RegisterWrite>): void;
    /**
    * Reads the 64-bit register at `offset` on the host until `value & mask == expected`
    * or `timeout-ns` passes (capped by the call's deadline); returns the last value read.
    */
    poll64(offset: bigint, mask: bigint, expected: bigint, timeoutNs: bigint): bigint;
    [Symbol.dispose](): void;
  }
}
