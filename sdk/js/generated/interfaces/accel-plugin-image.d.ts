/// <reference path="./accel-plugin-types.d.ts" />
declare module 'accel:plugin/image@0.2.0' {
  export type Error = import('accel:plugin/types@0.2.0').Error;
  
  export class Image implements Disposable {
    /**
     * This type does not have a public constructor.
     */
    private constructor();
    size(): bigint;
    /**
    * Copies out `len` bytes at `offset`; `len` is at most 1 MiB per call.
    */
    read(offset: bigint, len: number): Uint8Array;
    [Symbol.dispose](): void;
  }
}
