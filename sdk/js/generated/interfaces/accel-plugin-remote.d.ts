/// <reference path="./accel-plugin-dma.d.ts" />
/// <reference path="./accel-plugin-events.d.ts" />
/// <reference path="./accel-plugin-image.d.ts" />
/// <reference path="./accel-plugin-mmio.d.ts" />
/// <reference path="./accel-plugin-types.d.ts" />
declare module 'accel:plugin/remote@0.2.0' {
  export type Error = import('accel:plugin/types@0.2.0').Error;
  export type Guid = import('accel:plugin/types@0.2.0').Guid;
  export type BusAddress = import('accel:plugin/types@0.2.0').BusAddress;
  export type ObjectType = import('accel:plugin/types@0.2.0').ObjectType;
  export type AcceleratorState = import('accel:plugin/types@0.2.0').AcceleratorState;
  export type OpenMode = import('accel:plugin/types@0.2.0').OpenMode;
  export type Region = import('accel:plugin/mmio@0.2.0').Region;
  export type Buffer = import('accel:plugin/dma@0.2.0').Buffer;
  export type Event = import('accel:plugin/events@0.2.0').Event;
  export type Image = import('accel:plugin/image@0.2.0').Image;
  /**
   * A device as the node describes it to this client.
   */
  export interface RemoteDevice {
    /**
     * The node's id for it (`<plugin>/<name>` there): what `open` takes.
     */
    id: string,
    objectType: ObjectType,
    name: string,
    guid: Guid,
    vendorId: number,
    deviceId: number,
    busAddress?: BusAddress,
    socketId?: number,
    deviceType: string,
    /**
     * As the node's plugin reported it: `localhost` for the node's own cards.
     */
    host: string,
    numMmio: number,
    numInterrupts: number,
    acceleratorState?: AcceleratorState,
    extras: Array<[string, string]>,
  }
  /**
   * What a device event waits for.
   * # Variants
   * 
   * ## `"interrupt"`
   * 
   * ## `"error"`
   * 
   * ## `"power-thermal"`
   */
  export type RemoteEventKind = 'interrupt' | 'error' | 'power-thermal';
  /**
   * Where an allocation lives.
   * # Variants
   * 
   * ## `"host"`
   * 
   * ## `"device"`
   * 
   * ## `"shared"`
   */
  export type RemoteMemoryKind = 'host' | 'device' | 'shared';
  /**
   * A kernel argument; memory is named by the node's allocation id and an offset.
   */
  export type RemoteArgument = RemoteArgumentMemory | RemoteArgumentScalar32 | RemoteArgumentScalar64 | RemoteArgumentBytes;
  export interface RemoteArgumentMemory {
    tag: 'memory',
    val: [bigint, bigint],
  }
  export interface RemoteArgumentScalar32 {
    tag: 'scalar32',
    val: number,
  }
  export interface RemoteArgumentScalar64 {
    tag: 'scalar64',
    val: bigint,
  }
  export interface RemoteArgumentBytes {
    tag: 'bytes',
    val: Uint8Array,
  }
  /**
   * A buffer prepared on the node, and its mirror in host memory.
   */
  export interface RemoteBuffer {
    /**
     * The node's id for it.
     */
    id: bigint,
    buffer: Buffer,
    /**
     * The device's address for it.
     */
    iova: bigint,
  }
  /**
   * Memory allocated on the node.
   */
  export interface RemoteMemory {
    /**
     * The node's id for it.
     */
    id: bigint,
    /**
     * The mirror of host and shared memory.
     */
    buffer?: Buffer,
    deviceAddress: bigint,
  }
  
  export class Node implements Disposable {
    /**
     * This type does not have a public constructor.
     */
    private constructor();
    /**
    * Connects to `endpoint`, spelled as the plugin's grant spells it
    * (`unix:///run/accelhost/serve.sock`, `node1.example:7700`), and attaches a session.
    */
    static connect(endpoint: string): Node;
    /**
    * The node's name: what `host` says of its devices, seen from elsewhere.
    */
    name(): string;
    /**
    * Whether the session still stands; once the connection dropped or the node went
    * away, every call fails and the plugin connects again.
    */
    isAttached(): boolean;
    enumerate(): Array<RemoteDevice>;
    /**
    * Opens device `id`; returns the node's handle number.
    */
    open(id: string, mode: OpenMode): bigint;
    close(handle: bigint): void;
    reset(handle: bigint): void;
    reconfigure(handle: bigint, slot: number, image: Image): void;
    mapMmio(handle: bigint, index: number): Region;
    prepareBuffer(handle: bigint, size: bigint, readOnly: boolean): RemoteBuffer;
    registerEvent(handle: bigint, kind: RemoteEventKind, vector: number): Event;
    memAlloc(handle: bigint, kind: RemoteMemoryKind, size: bigint, bank: number | undefined): RemoteMemory;
    /**
    * Creates a program from `image`; an empty image asks for the device's built-in one.
    */
    programCreate(handle: bigint, image: Image): bigint;
    kernelGet(program: bigint, name: string): bigint;
    queueCreate(handle: bigint): bigint;
    enqueueMemcpy(queue: bigint, dst: [bigint, bigint], src: [bigint, bigint], size: bigint): Event;
    enqueueLaunch(queue: bigint, kernel: bigint, args: Array<RemoteArgument>): Event;
    /**
    * Releases a buffer, allocation, program, kernel or queue of the session.
    */
    release(object: bigint): void;
    [Symbol.dispose](): void;
  }
}
