/// <reference path="./accel-plugin-dma.d.ts" />
/// <reference path="./accel-plugin-events.d.ts" />
/// <reference path="./accel-plugin-image.d.ts" />
/// <reference path="./accel-plugin-types.d.ts" />
declare module 'accel:plugin/xocl@0.2.0' {
  /**
   * The devices this plugin was granted.
   */
  export function listDevices(): Array<DeviceDesc>;
  export type Error = import('accel:plugin/types@0.2.0').Error;
  export type Guid = import('accel:plugin/types@0.2.0').Guid;
  export type BusAddress = import('accel:plugin/types@0.2.0').BusAddress;
  export type Buffer = import('accel:plugin/dma@0.2.0').Buffer;
  export type Event = import('accel:plugin/events@0.2.0').Event;
  export type Image = import('accel:plugin/image@0.2.0').Image;
  /**
   * What sysfs (or the emulator) says about a granted device.
   */
  export interface DeviceDesc {
    /**
     * The name the device is granted and opened by: `emu:<id>` or `/dev/dri/renderDN`.
     */
    path: string,
    vendorId: number,
    deviceId: number,
    busAddress?: BusAddress,
    boardName: string,
    /**
     * The uuid of the xclbin loaded on the card, if any.
     */
    loaded?: Guid,
    emulated: boolean,
  }
  /**
   * The kinds of memory in an xclbin's MEM_TOPOLOGY.
   * # Variants
   * 
   * ## `"ddr3"`
   * 
   * ## `"ddr4"`
   * 
   * ## `"dram"`
   * 
   * ## `"streaming"`
   * 
   * ## `"hbm"`
   * 
   * ## `"bram"`
   * 
   * ## `"uram"`
   * 
   * ## `"host"`
   * 
   * ## `"other"`
   */
  export type MemKind = 'ddr3' | 'ddr4' | 'dram' | 'streaming' | 'hbm' | 'bram' | 'uram' | 'host' | 'other';
  /**
   * One memory bank of the loaded xclbin.
   */
  export interface MemBank {
    index: number,
    kind: MemKind,
    used: boolean,
    /**
     * Device address of the bank's first byte.
     */
    base: bigint,
    /**
     * Size in bytes.
     */
    size: bigint,
    tag: string,
  }
  /**
   * # Variants
   * 
   * ## `"scalar"`
   * 
   * A value written into the CU's registers.
   * ## `"global"`
   * 
   * A device address of a buffer (a pointer argument).
   */
  export type ArgKind = 'scalar' | 'global';
  /**
   * One argument of a kernel, from the xclbin's metadata.
   */
  export interface KernelArg {
    name: string,
    index: number,
    /**
     * Byte offset in the CU's register space.
     */
    offset: number,
    /**
     * Bytes in the register map: 4 for a 32-bit scalar, 8 for a pointer or 64-bit value.
     */
    size: number,
    kind: ArgKind,
  }
  export interface KernelMeta {
    name: string,
    args: Array<KernelArg>,
  }
  /**
   * A compute unit, in CU-index order (bit `index` of an ERT `cu_mask`).
   */
  export interface ComputeUnit {
    index: number,
    /**
     * `kernel:instance`, such as `vadd:vadd_1`.
     */
    name: string,
    kernel: string,
    base: bigint,
  }
  /**
   * A kernel argument of one CU wired to a memory bank.
   */
  export interface Connection {
    cu: number,
    argIndex: number,
    bank: number,
  }
  /**
   * What the host read from a validated xclbin.
   */
  export interface XclbinInfo {
    uuid: Guid,
    banks: Array<MemBank>,
    computeUnits: Array<ComputeUnit>,
    connections: Array<Connection>,
    kernels: Array<KernelMeta>,
  }
  /**
   * # Variants
   * 
   * ## `"to-device"`
   * 
   * ## `"from-device"`
   */
  export type SyncDirection = 'to-device' | 'from-device';
  
  export class Bo implements Disposable {
    /**
     * This type does not have a public constructor.
     */
    private constructor();
    size(): bigint;
    /**
    * The address kernels use.
    */
    deviceAddress(): bigint;
    /**
    * The memory bank (MEM_TOPOLOGY index); none for host-only memory.
    */
    bank(): number | undefined;
    /**
    * The host-visible memory of a host-only BO, as a DMA buffer the plugin can hand to
    * the host for applications to read and write directly.
    */
    hostBuffer(): Buffer;
    [Symbol.dispose](): void;
  }
  
  export class Device implements Disposable {
    /**
     * This type does not have a public constructor.
     */
    private constructor();
    static open(path: string): Device;
    /**
    * READ_AXLF. Loading the xclbin already loaded is a no-op; loading another one while
    * contexts hold the current one fails with `busy`.
    */
    loadXclbin(image: Image): XclbinInfo;
    /**
    * The xclbin loaded on the card, if any.
    */
    loadedXclbin(): XclbinInfo | undefined;
    /**
    * Opens a context on compute unit `cu` of the xclbin `uuid` (CTX alloc).
    */
    openContext(uuid: Guid, cu: number, exclusive: boolean): void;
    closeContext(uuid: Guid, cu: number): void;
    /**
    * Creates a BO of `size` bytes in bank `bank`, or in host memory when `bank` is none.
    */
    createBo(size: bigint, bank: number | undefined): Bo;
    /**
    * Copies `size` bytes at `offset` between `bo`'s host backing and its device memory,
    * once every event in `after` completed.
    */
    syncBo(bo: Bo, direction: SyncDirection, offset: bigint, size: bigint, after: Array<Event>): Event;
    /**
    * Copies device memory of one BO to another (COPY_BO), once `after` completed.
    */
    copyBo(dst: Bo, dstOffset: bigint, src: Bo, srcOffset: bigint, size: bigint, after: Array<Event>): Event;
    /**
    * Submits an exec buffer with an ERT packet (header, CU masks, register map) to the
    * scheduler, once `after` completed. At most 8 dependencies.
    */
    exec(packet: Uint32Array, after: Array<Event>): Event;
    /**
    * Resets the device: pending commands fail, compute units return to idle.
    */
    reset(): void;
    [Symbol.dispose](): void;
  }
}
