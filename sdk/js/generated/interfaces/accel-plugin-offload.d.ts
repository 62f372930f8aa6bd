/// <reference path="./accel-plugin-dma.d.ts" />
/// <reference path="./accel-plugin-events.d.ts" />
/// <reference path="./accel-plugin-image.d.ts" />
/// <reference path="./accel-plugin-types.d.ts" />
declare module 'accel:plugin/offload@0.2.0' {
  /**
   * Allocates `size` bytes of `kind` memory; `bank` picks a device memory bank where the
   * device has several (the plugin's default otherwise).
   */
  export function memAlloc(handle: bigint, kind: MemoryKind, size: bigint, bank: number | undefined): Allocation;
  export function memFree(handle: bigint, id: bigint): void;
  export function programCreate(handle: bigint, image: Image): bigint;
  export function programRelease(program: bigint): void;
  export function kernelGet(program: bigint, name: string): bigint;
  export function queueCreate(handle: bigint): bigint;
  export function queueRelease(queue: bigint): void;
  export function enqueueMemcpy(queue: bigint, dst: MemoryRange, src: MemoryRange, size: bigint): Event;
  export function enqueueLaunch(queue: bigint, kernel: bigint, args: Array<KernelArgument>, size: LaunchSize): Event;
  export type Error = import('accel:plugin/types@0.2.0').Error;
  export type Buffer = import('accel:plugin/dma@0.2.0').Buffer;
  export type Event = import('accel:plugin/events@0.2.0').Event;
  export type Image = import('accel:plugin/image@0.2.0').Image;
  /**
   * # Variants
   * 
   * ## `"host"`
   * 
   * Host memory the device can reach.
   * ## `"device"`
   * 
   * Device memory.
   * ## `"shared"`
   * 
   * Memory both sides reach at the same address.
   */
  export type MemoryKind = 'host' | 'device' | 'shared';
  export interface Allocation {
    /**
     * The plugin's id for the allocation.
     */
    id: bigint,
    /**
     * Host-visible memory for `host` and `shared` allocations.
     */
    buffer?: Buffer,
    /**
     * The address kernels use.
     */
    deviceAddress: bigint,
  }
  /**
   * A place in an allocation.
   */
  export interface MemoryRange {
    allocation: bigint,
    offset: bigint,
  }
  export type KernelArgument = KernelArgumentMemory | KernelArgumentScalar32 | KernelArgumentScalar64 | KernelArgumentBytes;
  export interface KernelArgumentMemory {
    tag: 'memory',
    val: MemoryRange,
  }
  export interface KernelArgumentScalar32 {
    tag: 'scalar32',
    val: number,
  }
  export interface KernelArgumentScalar64 {
    tag: 'scalar64',
    val: bigint,
  }
  export interface KernelArgumentBytes {
    tag: 'bytes',
    val: Uint8Array,
  }
  export interface LaunchSize {
    global: [number, number, number],
    local: [number, number, number],
  }
}
