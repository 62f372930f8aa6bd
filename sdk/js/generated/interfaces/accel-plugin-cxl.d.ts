/// <reference path="./accel-plugin-dma.d.ts" />
/// <reference path="./accel-plugin-events.d.ts" />
/// <reference path="./accel-plugin-mmio.d.ts" />
/// <reference path="./accel-plugin-types.d.ts" />
declare module 'accel:plugin/cxl@0.2.0' {
  /**
   * The AFUs this plugin was granted.
   */
  export function listAfus(): Array<AfuDesc>;
  /**
   * The adapters the granted AFUs are on, each once, in (emulated, card) order.
   * (Added in 0.2.0.)
   */
  export function listCards(): Array<CardDesc>;
  export type Error = import('accel:plugin/types@0.2.0').Error;
  export type BusAddress = import('accel:plugin/types@0.2.0').BusAddress;
  export type Region = import('accel:plugin/mmio@0.2.0').Region;
  export type Buffer = import('accel:plugin/dma@0.2.0').Buffer;
  export type Event = import('accel:plugin/events@0.2.0').Event;
  /**
   * How an AFU shares itself between processes (sysfs `mode`).
   * # Variants
   * 
   * ## `"dedicated"`
   * 
   * One context owns the whole AFU (`dedicated_process`).
   * ## `"afu-directed"`
   * 
   * Many contexts, each with a process element and its own problem-state slice.
   */
  export type AfuMode = 'dedicated' | 'afu-directed';
  /**
   * The device node a context is opened on.
   * # Variants
   * 
   * ## `"master"`
   * 
   * `afuC.Sm`: sees the whole problem-state area.
   * ## `"slave"`
   * 
   * `afuC.Ss`: sees only its own slice.
   * ## `"dedicated"`
   * 
   * `afuC.Sd`: the one context of a dedicated AFU.
   */
  export type ContextKind = 'master' | 'slave' | 'dedicated';
  /**
   * What sysfs (or the emulator) says about a granted AFU.
   */
  export interface AfuDesc {
    /**
     * The name the AFU is granted and opened by: `emu:<id>` or `/dev/cxl/afuC.S`.
     */
    path: string,
    card: number,
    slice: number,
    mode?: AfuMode,
    modesSupported: Array<AfuMode>,
    /**
     * Bytes a slave or dedicated context maps (`mmio_size`).
     */
    mmioSize: bigint,
    /**
     * Master only: where the per-process areas start, and the bytes of each.
     */
    ppMmioOffset: bigint,
    ppMmioLength: bigint,
    irqsMin: number,
    irqsMax: number,
    /**
     * How many contexts may be open at once.
     */
    maxContexts: number,
    caiaMajor: number,
    caiaMinor: number,
    /**
     * Configuration record 0: the AFU's identity.
     */
    vendorId: number,
    deviceId: number,
    emulated: boolean,
  }
  /**
   * What START_WORK passes.
   */
  export interface Work {
    /**
     * The work element descriptor: AFU-defined, usually the effective address of a queue or
     * control block.
     */
    wed: bigint,
    amr?: bigint,
    /**
     * Interrupts to allocate (default `irqs-min`).
     */
    numInterrupts?: number,
  }
  /**
   * The AFU touched an effective address the context cannot reach.
   */
  export interface StorageFault {
    address: bigint,
    dsisr: bigint,
  }
  /**
   * An event `read()` returns on a context.
   */
  export type AfuEvent = AfuEventInterrupt | AfuEventDataStorage | AfuEventAfuError;
  /**
   * AFU interrupt number (1-based).
   */
  export interface AfuEventInterrupt {
    tag: 'interrupt',
    val: number,
  }
  export interface AfuEventDataStorage {
    tag: 'data-storage',
    val: StorageFault,
  }
  export interface AfuEventAfuError {
    tag: 'afu-error',
    val: bigint,
  }
  /**
   * A CAPI adapter that granted AFUs are on.
   * (Added in 0.2.0.)
   */
  export interface CardDesc {
    /**
     * The adapter number (`cardC`), as the AFUs' `card`.
     */
    card: number,
    /**
     * The adapter's PCI function (`cardC/device` in sysfs, or the emulator's config).
     */
    busAddress?: BusAddress,
    /**
     * Whether the adapter is emulated (an emulated and a real adapter may share a number).
     */
    emulated: boolean,
  }
  
  export class Context implements Disposable {
    /**
     * This type does not have a public constructor.
     */
    private constructor();
    /**
    * Opens a context on the `kind` node of a granted AFU; `no-space` when every context
    * is in use.
    */
    static open(path: string, kind: ContextKind): Context;
    /**
    * The process element (the context id).
    */
    processElement(): number;
    /**
    * START_WORK; a context starts work once.
    */
    startWork(work: Work): void;
    /**
    * Maps the problem-state area, after start-work. With `big-endian`, the host swaps
    * every access, so the region reads and writes the AFU's big-endian registers as
    * native values (libcxl's CXL_MMIO_BIG_ENDIAN).
    */
    mapMmio(bigEndian: boolean): Region;
    /**
    * Lets the AFU reach `buffer`; returns its effective address.
    */
    attachBuffer(buffer: Buffer): bigint;
    /**
    * Waits on the host for the next event, up to the timeout (capped by the call's
    * deadline); none if none came.
    */
    readEvent(timeoutNs: bigint): AfuEvent | undefined;
    /**
    * An event that completes when AFU interrupt `irq` arrives, and fails if the context
    * takes a storage fault or an AFU error first.
    */
    interruptEvent(irq: number): Event;
    [Symbol.dispose](): void;
  }
}
