// @ts-check
/**
 * The JavaScript SDK for accelhost plugins: errors the host understands, the filter semantics
 * every plugin shares, and `exportPlugin`, which turns a plugin object into the five exported
 * interfaces with an `unsupported` answer for every call the object leaves out but the
 * lifecycle calls and `close`, which succeed (like the defaults of the Rust SDK's `Plugin`
 * trait).
 *
 * A plugin imports it as `accelhost-sdk`; `accelhost-sdk build` bundles it in. The types
 * come from `generated/`, which `jco guest-types` writes from `wit/` (`npm run types`).
 */

import { log as hostLog } from 'accel:plugin/log@0.2.0';

/** @typedef {import('accel:plugin/types@0.2.0').ErrorCode} ErrorCode */
/** @typedef {import('accel:plugin/types@0.2.0').Error} ErrorRecord */
/** @typedef {import('accel:plugin/types@0.2.0').OpenMode} OpenMode */
/** @typedef {import('accel:plugin/discovery@0.2.0').Filter} Filter */
/** @typedef {import('accel:plugin/discovery@0.2.0').Properties} Properties */
/** @typedef {import('accel:plugin/discovery@0.2.0').Discovered} Discovered */
/** @typedef {import('accel:plugin/fpga@0.2.0').BufferFlags} BufferFlags */
/** @typedef {import('accel:plugin/fpga@0.2.0').PreparedBuffer} PreparedBuffer */
/** @typedef {import('accel:plugin/fpga@0.2.0').EventKind} EventKind */
/** @typedef {import('accel:plugin/offload@0.2.0').MemoryKind} MemoryKind */
/** @typedef {import('accel:plugin/offload@0.2.0').MemoryRange} MemoryRange */
/** @typedef {import('accel:plugin/offload@0.2.0').Allocation} Allocation */
/** @typedef {import('accel:plugin/offload@0.2.0').KernelArgument} KernelArgument */
/** @typedef {import('accel:plugin/offload@0.2.0').LaunchSize} LaunchSize */
/** @typedef {import('accel:plugin/attributes@0.2.0').AttributeInfo} AttributeInfo */
/** @typedef {import('accel:plugin/mmio@0.2.0').Region} Region */
/** @typedef {import('accel:plugin/events@0.2.0').Event} Event */
/** @typedef {import('accel:plugin/image@0.2.0').Image} Image */
/** @typedef {import('accel:plugin/log@0.2.0').Level} Level */

/**
 * An error the host receives as the WIT `error` record: throw it from any call. (componentize-js
 * turns a thrown value with a `payload` into the call's `err`.) Errors thrown by host imports
 * carry the same `payload`, so rethrowing one passes the host's code and message on. Anything
 * else thrown from an export (a plain `Error`, a string) fails the call as `internal`, with its
 * message and the author's file and line that threw it: `Error: boom (at plugin.js:42)`.
 */
export class PluginError extends Error {
  /**
   * @param {ErrorCode} code
   * @param {string} message
   */
  constructor(code, message) {
    super(message);
    this.name = 'PluginError';
    /** @type {ErrorRecord} */
    this.payload = { code, message };
  }
}

/** Constructors for the common codes: `throw errors.notFound(...)`. */
export const errors = {
  /** @param {string} call the WIT name of the call the plugin does not implement */
  unsupported: (call) => new PluginError('unsupported', `${call} is not supported by this plugin`),
  /** @param {string} message */
  invalidArgument: (message) => new PluginError('invalid-argument', message),
  /** @param {string} message */
  notFound: (message) => new PluginError('not-found', message),
  /** @param {string} message */
  busy: (message) => new PluginError('busy', message),
  /** @param {string} message */
  notInitialized: (message) => new PluginError('not-initialized', message),
  /** @param {string} message */
  internal: (message) => new PluginError('internal', message),
};

/**
 * Drops a host resource now (a port, a buffer, a region) instead of when the garbage collector
 * gets to it. The engine may lack `Symbol.dispose`; the bindings then use `Symbol.for('dispose')`.
 * @param {Disposable} resource
 */
export function dispose(resource) {
  const symbol = Symbol.dispose ?? Symbol.for('dispose');
  /** @type {Record<symbol, () => void>} */ (/** @type {unknown} */ (resource))[symbol]();
}

/**
 * Writes a line to the host's log, tagged with the plugin's name.
 * @param {Level} level
 * @param {string} message
 */
export function log(level, message) {
  hostLog(level, message);
}

/**
 * Does a device on `deviceHost` match the host filter `filter`? `*` matches every host,
 * `localhost` this machine, `^localhost` any other, and any other text must be equal.
 * @param {string} filter
 * @param {string} deviceHost
 */
export function hostMatches(filter, deviceHost) {
  switch (filter) {
    case '*':
      return true;
    case 'localhost':
      return deviceHost === 'localhost';
    case '^localhost':
      return deviceHost !== 'localhost';
    default:
      return filter === deviceHost;
  }
}

/**
 * Does a device with `properties` match `filter`? Every field the filter sets must match.
 * @param {Filter} filter
 * @param {Properties} properties
 */
export function filterMatches(filter, properties) {
  const bus = properties.busAddress;
  const wantedBus = filter.busAddress;
  return (
    (filter.objectType === undefined || filter.objectType === properties.objectType) &&
    (filter.guid === undefined ||
      (filter.guid.high === properties.guid.high && filter.guid.low === properties.guid.low)) &&
    (filter.vendorId === undefined || filter.vendorId === properties.vendorId) &&
    (filter.deviceId === undefined || filter.deviceId === properties.deviceId) &&
    (wantedBus === undefined ||
      (bus !== undefined &&
        bus.segment === wantedBus.segment &&
        bus.bus === wantedBus.bus &&
        bus.device === wantedBus.device &&
        bus.function === wantedBus.function)) &&
    (filter.deviceType === undefined || filter.deviceType === properties.deviceType) &&
    (filter.host === undefined || hostMatches(filter.host, properties.host))
  );
}

/**
 * Whether `properties` match `filters`: any one of them, or all devices when there are none.
 * @param {Filter[]} filters
 * @param {Properties} properties
 */
export function anyFilterMatches(filters, properties) {
  return filters.length === 0 || filters.some((filter) => filterMatches(filter, properties));
}

/**
 * An accelerator (what applications open) named `name` with the interface `guid`: an `fpga`
 * on this machine with no ids, bus address, MMIO regions, interrupts, state or parent; spread
 * it and set the fields the device has.
 * @param {string} name
 * @param {{high: bigint, low: bigint}} guid
 * @returns {Properties}
 */
export function accelerator(name, guid) {
  return {
    objectType: 'accelerator',
    name,
    guid,
    vendorId: 0,
    deviceId: 0,
    busAddress: undefined,
    socketId: undefined,
    deviceType: 'fpga',
    host: 'localhost',
    numMmio: 0,
    numInterrupts: 0,
    acceleratorState: undefined,
    parent: undefined,
    extras: [],
  };
}

/**
 * What `enumerate` answers for a fixed list of devices: those of `devices` that match
 * `filters`, each with its index in `devices` as its token.
 * @param {Filter[]} filters
 * @param {Properties[]} devices
 * @returns {Discovered[]}
 */
export function discover(filters, devices) {
  return devices.flatMap((properties, index) =>
    anyFilterMatches(filters, properties) ? [{ token: BigInt(index), properties }] : [],
  );
}

/**
 * What a plugin object may implement; each method is one export of the `accel:plugin` world
 * (camelCase of the WIT name). Leave out what the device does not do.
 *
 * @typedef {object} Plugin
 * @property {(config: string) => void} [configure] default: accepts only an empty config
 * @property {() => void} [initialize]
 * @property {() => void} [finalize]
 * @property {(deviceType: string) => boolean} [supportsDevice] default: yes
 * @property {(host: string) => boolean} [supportsHost] default: local devices only
 * @property {(filters: Filter[]) => Discovered[]} [enumerate]
 * @property {(token: bigint) => Properties} [describe]
 * @property {(token: bigint, mode: OpenMode) => bigint} [open]
 * @property {(handle: bigint) => void} [close] default: succeeds (nothing kept per handle)
 * @property {(handle: bigint, index: number) => Region} [mapMmio]
 * @property {(handle: bigint, size: bigint, options: BufferFlags) => PreparedBuffer} [prepareBuffer]
 * @property {(handle: bigint, id: bigint) => void} [releaseBuffer]
 * @property {(handle: bigint, id: bigint) => bigint} [ioAddress]
 * @property {(handle: bigint) => void} [reset]
 * @property {(handle: bigint, slot: number, image: Image) => void} [reconfigure]
 * @property {(handle: bigint, kind: EventKind, vector: number) => Event} [registerEvent]
 * @property {(handle: bigint, kind: MemoryKind, size: bigint, bank: number | undefined) => Allocation} [memAlloc]
 * @property {(handle: bigint, id: bigint) => void} [memFree]
 * @property {(handle: bigint, image: Image) => bigint} [programCreate]
 * @property {(program: bigint) => void} [programRelease]
 * @property {(program: bigint, name: string) => bigint} [kernelGet]
 * @property {(handle: bigint) => bigint} [queueCreate]
 * @property {(queue: bigint) => void} [queueRelease]
 * @property {(queue: bigint, dst: MemoryRange, src: MemoryRange, size: bigint) => Event} [enqueueMemcpy]
 * @property {(queue: bigint, kernel: bigint, args: KernelArgument[], size: LaunchSize) => Event} [enqueueLaunch]
 * @property {(token: bigint) => AttributeInfo[]} [listAttributes]
 * @property {(token: bigint, name: string) => string} [readAttribute]
 * @property {(token: bigint, name: string, value: string) => void} [writeAttribute]
 */

/**
 * The table `accelhost-sdk build` appends to the bundle (sdk/js/source-lines.mjs): from runs of
 * the bundle's lines to the author's files and lines.
 * @typedef {{bundle: string, files: string[], runs: number[][]}} SourceLines
 */

/**
 * The author's `file:line` a bundle line came from, or '' when it is not the author's code.
 * @param {SourceLines | undefined} table
 * @param {string} file the frame's file
 * @param {number} line the frame's line in that file
 * @returns {string}
 */
function authorLine(table, file, line) {
  if (!table || file !== table.bundle) {
    return '';
  }
  let found = null;
  for (const run of table.runs) {
    if (run[0] > line) {
      break;
    }
    found = run;
  }
  if (!found || found[1] < 0) {
    return '';
  }
  return `${table.files[found[1]]}:${found[2] + (line - found[0])}`;
}

/**
 * Where `thrown` was thrown, from its stack (SpiderMonkey writes frames as
 * `function@file:line:column`): `at plugin.js:42`, the innermost frame in the author's code,
 * else `in enumerate`, the innermost named frame; '' when the stack says neither.
 * @param {unknown} thrown
 * @returns {string}
 */
function thrownAt(thrown) {
  const stack = thrown instanceof Error ? String(thrown.stack ?? '') : '';
  const table = /** @type {SourceLines | undefined} */ (
    /** @type {any} */ (globalThis)[Symbol.for('accelhost-sdk.source-lines')]
  );
  let named = '';
  for (const frame of stack.split('\n')) {
    const at = frame.lastIndexOf('@');
    const place = /^(.*):(\d+):\d+$/.exec(frame.slice(at + 1));
    const line = place ? authorLine(table, place[1], Number(place[2])) : '';
    if (line !== '') {
      return `at ${line}`;
    }
    if (named === '' && at > 0) {
      named = `in ${frame.slice(0, at)}`;
    }
  }
  return named;
}

/**
 * The error a value thrown from an export becomes: one with a `payload` as it is, anything
 * else `internal`, saying what was thrown and where.
 * @param {unknown} thrown
 * @returns {unknown}
 */
function asPluginError(thrown) {
  const payload = /** @type {{payload?: {code?: unknown}}} */ (Object(thrown)).payload;
  if (payload && typeof payload.code === 'string') {
    return thrown;
  }
  const what =
    thrown instanceof Error ? `${thrown.name}: ${thrown.message}` : `threw ${String(thrown)}`;
  const where = thrownAt(thrown);
  return new PluginError('internal', where ? `${what} (${where})` : what);
}

/**
 * `call`, with what it throws made an error the host receives ({@link asPluginError}).
 * @template {(...args: any[]) => any} F
 * @param {F} call
 * @returns {F}
 */
function reported(call) {
  return /** @type {F} */ (
    (/** @type {any[]} */ ...args) => {
      try {
        return call(...args);
      } catch (thrown) {
        throw asPluginError(thrown);
      }
    }
  );
}

/**
 * Picks `plugin[name]`, or a function that throws `unsupported` naming the WIT call.
 * @template {keyof Plugin} K
 * @param {Plugin} plugin
 * @param {K} name
 * @param {string} witName
 * @returns {NonNullable<Plugin[K]>}
 */
function method(plugin, name, witName) {
  const found = plugin[name];
  if (typeof found === 'function') {
    return /** @type {NonNullable<Plugin[K]>} */ (reported(found.bind(plugin)));
  }
  return /** @type {NonNullable<Plugin[K]>} */ (
    /** @type {unknown} */ (
      () => {
        throw errors.unsupported(witName);
      }
    )
  );
}

/**
 * The exports of a component made from `plugin`:
 * `export const { lifecycle, discovery, fpga, offload, attributes } = exportPlugin(plugin);`, where
 * `plugin` is an object literal with the methods (its parameters typed by {@link Plugin}) or an
 * instance of a class.
 * @param {Plugin} plugin
 */
export function exportPlugin(plugin) {
  /** @param {string} config */
  const acceptEmptyConfig = (config) => {
    const text = config.trim();
    if (text !== '' && text !== '{}' && text !== 'null') {
      throw errors.invalidArgument(`this plugin takes no configuration, got ${text}`);
    }
  };
  return {
    lifecycle: {
      configure: reported(plugin.configure ? plugin.configure.bind(plugin) : acceptEmptyConfig),
      initialize: reported(plugin.initialize ? plugin.initialize.bind(plugin) : () => {}),
      finalize: reported(plugin.finalize ? plugin.finalize.bind(plugin) : () => {}),
      supportsDevice: plugin.supportsDevice ? plugin.supportsDevice.bind(plugin) : () => true,
      supportsHost: plugin.supportsHost
        ? plugin.supportsHost.bind(plugin)
        : (/** @type {string} */ host) => hostMatches(host, 'localhost'),
    },
    discovery: {
      enumerate: method(plugin, 'enumerate', 'enumerate'),
      describe: method(plugin, 'describe', 'describe'),
    },
    fpga: {
      open: method(plugin, 'open', 'open'),
      close: plugin.close ? reported(plugin.close.bind(plugin)) : () => {},
      mapMmio: method(plugin, 'mapMmio', 'map-mmio'),
      prepareBuffer: method(plugin, 'prepareBuffer', 'prepare-buffer'),
      releaseBuffer: method(plugin, 'releaseBuffer', 'release-buffer'),
      ioAddress: method(plugin, 'ioAddress', 'io-address'),
      reset: method(plugin, 'reset', 'reset'),
      reconfigure: method(plugin, 'reconfigure', 'reconfigure'),
      registerEvent: method(plugin, 'registerEvent', 'register-event'),
    },
    offload: {
      memAlloc: method(plugin, 'memAlloc', 'mem-alloc'),
      memFree: method(plugin, 'memFree', 'mem-free'),
      programCreate: method(plugin, 'programCreate', 'program-create'),
      programRelease: method(plugin, 'programRelease', 'program-release'),
      kernelGet: method(plugin, 'kernelGet', 'kernel-get'),
      queueCreate: method(plugin, 'queueCreate', 'queue-create'),
      queueRelease: method(plugin, 'queueRelease', 'queue-release'),
      enqueueMemcpy: method(plugin, 'enqueueMemcpy', 'enqueue-memcpy'),
      enqueueLaunch: method(plugin, 'enqueueLaunch', 'enqueue-launch'),
    },
    attributes: {
      listAttributes: method(plugin, 'listAttributes', 'list-attributes'),
      readAttribute: method(plugin, 'readAttribute', 'read-attribute'),
      writeAttribute: method(plugin, 'writeAttribute', 'write-attribute'),
    },
  };
}
