/// <reference path="./accel-plugin-dma.d.ts" />
/// <reference path="./accel-plugin-events.d.ts" />
/// <reference path="./accel-plugin-image.d.ts" />
/// <reference path="./accel-plugin-mmio.d.ts" />
/// <reference path="./accel-plugin-types.d.ts" />
declare module 'accel:plugin/fpga@0.2.0' {
  /**
   * Opens the accelerator behind `token`; returns the plugin's handle number.
   */
  export function open(token: bigint, mode: OpenMode): bigint;
  export function close(handle: bigint): void;
  /**
   * Maps MMIO region `index` of an open accelerator.
   */
  export function mapMmio(handle: bigint, index: number): Region;
  export function prepareBuffer(handle: bigint, size: bigint, options: BufferFlags): PreparedBuffer;
  export function releaseBuffer(handle: bigint, id: bigint): void;
  export function ioAddress(handle: bigint, id: bigint): bigint;
  export function reset(handle: bigint): void;
  /**
   * Loads `image` into reconfigurable slot `slot`.
   */
  export function reconfigure(handle: bigint, slot: number, image: Image): void;
  /**
   * Returns an event that completes when the device raises `kind` (on interrupt `vector`).
   */
  export function registerEvent(handle: bigint, kind: EventKind, vector: number): Event;
  export type Error = import('accel:plugin/types@0.2.0').Error;
  export type OpenMode = import('accel:plugin/types@0.2.0').OpenMode;
  export type Region = import('accel:plugin/mmio@0.2.0').Region;
  export type Buffer = import('accel:plugin/dma@0.2.0').Buffer;
  export type Event = import('accel:plugin/events@0.2.0').Event;
  export type Image = import('accel:plugin/image@0.2.0').Image;
  export interface BufferFlags {
    /**
     * The device only reads the buffer.
     */
    readOnly?: boolean,
  }
  export interface PreparedBuffer {
    /**
     * The plugin's id for the buffer (the OPAE workspace id).
     */
    id: bigint,
    /**
     * The host memory; the host serves application reads and writes from it directly.
     */
    buffer: Buffer,
    /**
     * The device's address for the buffer.
     */
    iova: bigint,
  }
  /**
   * # Variants
   * 
   * ## `"interrupt"`
   * 
   * ## `"error"`
   * 
   * ## `"power-thermal"`
   */
  export type EventKind = 'interrupt' | 'error' | 'power-thermal';
}
