/// <reference path="./accel-plugin-dma.d.ts" />
/// <reference path="./accel-plugin-mmio.d.ts" />
/// <reference path="./accel-plugin-types.d.ts" />
declare module 'accel:plugin/dfl@0.2.0' {
  /**
   * The ports this plugin was granted.
   */
  export function listPorts(): Array<PortDesc>;
  /**
   * Every granted port, probed by the host: one call instead of an open, a get-info and a
   * close per port.
   * (Added in 0.2.0.)
   */
  export function probePorts(): Array<PortProbe>;
  /**
   * The attributes of granted port `path` and of its card's FME.
   * (Added in 0.2.0.)
   */
  export function listAttributes(path: string): Array<AttributeInfo>;
  /**
   * Reads one attribute of granted port `path` (trailing newline removed).
   * (Added in 0.2.0.)
   */
  export function readAttribute(path: string, name: string): string;
  /**
   * Writes one attribute of granted port `path`; only those listed writable.
   * (Added in 0.2.0.)
   */
  export function writeAttribute(path: string, name: string, value: string): void;
  export type Error = import('accel:plugin/types@0.2.0').Error;
  export type Guid = import('accel:plugin/types@0.2.0').Guid;
  export type BusAddress = import('accel:plugin/types@0.2.0').BusAddress;
  export type Region = import('accel:plugin/mmio@0.2.0').Region;
  export type Buffer = import('accel:plugin/dma@0.2.0').Buffer;
  /**
   * What sysfs says about a granted port.
   */
  export interface PortDesc {
    /**
     * The name the port is granted and opened by: `emu:<id>` or `/dev/dfl-port.N`.
     */
    path: string,
    /**
     * The port number (`id` in sysfs).
     */
    portId: number,
    /**
     * The AFU id read from the AFU header (`afu_id` in sysfs).
     */
    afuId: Guid,
    /**
     * PCI ids of the card.
     */
    vendorId: number,
    deviceId: number,
    busAddress?: BusAddress,
    socketId?: number,
    /**
     * True for an emulated port.
     */
    emulated: boolean,
  }
  /**
   * `DFL_FPGA_PORT_GET_INFO`.
   */
  export interface PortInfo {
    flags: number,
    numRegions: number,
    numUmsgs: number,
  }
  export interface RegionAccess {
    read?: boolean,
    write?: boolean,
    mmap?: boolean,
  }
  /**
   * `DFL_FPGA_PORT_GET_REGION_INFO`.
   */
  export interface RegionInfo {
    index: number,
    access: RegionAccess,
    size: bigint,
    offset: bigint,
  }
  /**
   * A granted port, with what opening it shared finds, as OPAE's enumeration probes it.
   * (Added in 0.2.0.)
   */
  export interface PortProbe {
    desc: PortDesc,
    /**
     * Someone holds it exclusively (OPAE's `FPGA_ACCELERATOR_ASSIGNED`).
     */
    assigned: boolean,
    /**
     * The regions `DFL_FPGA_PORT_GET_INFO` reports; 0 when it is assigned.
     */
    numRegions: number,
  }
  /**
   * One sysfs attribute of a granted port or of its card's FME.
   * (Added in 0.2.0.)
   */
  export interface AttributeInfo {
    /**
     * Relative to the port's sysfs directory (`afu_id`, `errors/errors`), or, starting
     * with `fme/`, to the FME's (`fme/bitstream_id`, `fme/hwmon/hwmon0/temp1_input`).
     */
    name: string,
    writable: boolean,
  }
  
  export class Port implements Disposable {
    /**
     * This type does not have a public constructor.
     */
    private constructor();
    /**
    * Opens a granted port; `exclusive` fails with `busy` while anyone else holds it.
    */
    static open(path: string, exclusive: boolean): Port;
    info(): PortInfo;
    regionInfo(index: number): RegionInfo;
    /**
    * Maps region `index` (0 is the AFU's MMIO).
    */
    mapRegion(index: number): Region;
    /**
    * Makes `buffer` reachable by the device; returns its IO virtual address.
    */
    dmaMap(buffer: Buffer): bigint;
    /**
    * Removes the mapping that starts at `iova`.
    */
    dmaUnmap(iova: bigint): void;
    /**
    * `DFL_FPGA_PORT_RESET`: resets the AFU.
    */
    reset(): void;
    [Symbol.dispose](): void;
  }
}
