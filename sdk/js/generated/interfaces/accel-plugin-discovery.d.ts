/// <reference path="./accel-plugin-types.d.ts" />
declare module 'accel:plugin/discovery@0.2.0' {
  export function enumerate(filters: Array<Filter>): Array<Discovered>;
  /**
   * Fresh properties of a token (the host normally answers from what `enumerate` gave).
   */
  export function describe(token: bigint): Properties;
  export type Error = import('accel:plugin/types@0.2.0').Error;
  export type Guid = import('accel:plugin/types@0.2.0').Guid;
  export type BusAddress = import('accel:plugin/types@0.2.0').BusAddress;
  export type ObjectType = import('accel:plugin/types@0.2.0').ObjectType;
  export type AcceleratorState = import('accel:plugin/types@0.2.0').AcceleratorState;
  export interface Properties {
    objectType: ObjectType,
    /**
     * A name unique within the plugin, such as `dfl-port.0` or `emu:dfl0`.
     */
    name: string,
    /**
     * The AFU id for accelerators, the interface id for devices.
     */
    guid: Guid,
    vendorId: number,
    deviceId: number,
    busAddress?: BusAddress,
    socketId?: number,
    /**
     * The kind of device, such as `fpga`.
     */
    deviceType: string,
    /**
     * The host the device is attached to; `localhost` for this machine.
     */
    host: string,
    numMmio: number,
    numInterrupts: number,
    /**
     * For accelerators: whether someone holds it open.
     */
    acceleratorState?: AcceleratorState,
    /**
     * The token of the parent device, if it has one.
     */
    parent?: bigint,
    /**
     * Plugin-defined facts, shown by `accelhost info`.
     */
    extras: Array<[string, string]>,
  }
  /**
   * Every field that is set must match; a device matches a list of filters when it
   * matches any one of them (an empty list matches everything).
   */
  export interface Filter {
    objectType?: ObjectType,
    guid?: Guid,
    vendorId?: number,
    deviceId?: number,
    busAddress?: BusAddress,
    deviceType?: string,
    /**
     * A host name, or `localhost` (this machine), `^localhost` (any other) or `*`.
     */
    host?: string,
  }
  export interface Discovered {
    token: bigint,
    properties: Properties,
  }
}
