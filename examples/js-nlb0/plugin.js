// @ts-check
/**
 * A DFL plugin in JavaScript: every granted DFL port (an emulated NLB0 card, or a real
 * `/dev/dfl-port.N`) as an OPAE-style accelerator, with open, close, MMIO mapping, shared
 * buffers and reset on top of the host's `dfl` shim. It follows the shipped Rust plugin
 * (guest-plugins/dfl): the same properties, error codes, exclusive opens and buffer ids.
 */

import { Port, listPorts } from 'accel:plugin/dfl@0.2.0';
import { Buffer } from 'accel:plugin/dma@0.2.0';
import { anyFilterMatches, dispose, errors, exportPlugin, log } from 'accelhost-sdk';

/** @typedef {import('accel:plugin/dfl@0.2.0').PortDesc} PortDesc */
/** @typedef {import('accelhost-sdk').Properties} Properties */
/** @typedef {import('accelhost-sdk').Discovered} Discovered */
/** @typedef {import('accelhost-sdk').Filter} Filter */
/** @typedef {import('accelhost-sdk').OpenMode} OpenMode */
/** @typedef {import('accelhost-sdk').PreparedBuffer} PreparedBuffer */

/** The device type every DFL port reports. */
const DEVICE_TYPE = 'fpga';

/** A port the application opened, with the buffers it prepared through it. */
class OpenPort {
  /** @param {Port} port */
  constructor(port) {
    this.port = port;
    /** @type {Map<bigint, bigint>} buffer id → IO virtual address */
    this.buffers = new Map();
    this.nextBuffer = 0n;
  }
}

class DflPlugin {
  constructor() {
    this.initialized = false;
    /** @type {Map<string, bigint>} tokens stay stable: a port keeps the token it first got */
    this.tokens = new Map();
    /** @type {Map<bigint, OpenPort>} the open ports, by handle */
    this.openPorts = new Map();
    this.nextHandle = 0n;
  }

  requireInitialized() {
    if (!this.initialized) {
      throw errors.notInitialized('the js-nlb0 plugin was not initialized');
    }
  }

  /** @param {string} path */
  tokenFor(path) {
    let token = this.tokens.get(path);
    if (token === undefined) {
      token = BigInt(this.tokens.size);
      this.tokens.set(path, token);
    }
    return token;
  }

  /** @param {bigint} token @returns {PortDesc} */
  portForToken(token) {
    const path = [...this.tokens].find(([, t]) => t === token)?.[0];
    if (path === undefined) {
      throw errors.notFound(`no dfl port has token ${token}`);
    }
    const desc = listPorts().find((p) => p.path === path);
    if (desc === undefined) {
      throw errors.notFound(`dfl port ${path} is no longer granted`);
    }
    return desc;
  }

  /** @param {bigint} handle */
  openPort(handle) {
    const open = this.openPorts.get(handle);
    if (open === undefined) {
      throw errors.notFound(`no open dfl port has handle ${handle}`);
    }
    return open;
  }

  /** @param {PortDesc} desc @returns {Properties} */
  portProperties(desc) {
    // OPAE's probe: a port that cannot be opened shared is held exclusively by someone.
    /** @type {'unassigned' | 'assigned'} */
    let state = 'assigned';
    let numMmio = 0;
    try {
      const probe = Port.open(desc.path, false);
      try {
        numMmio = probe.info().numRegions;
      } catch {
        numMmio = 0;
      }
      dispose(probe);
      state = 'unassigned';
    } catch {
      // held exclusively
    }
    return {
      objectType: 'accelerator',
      name: desc.path.replace(/^\/dev\//, ''),
      guid: desc.afuId,
      vendorId: desc.vendorId,
      deviceId: desc.deviceId,
      busAddress: desc.busAddress,
      socketId: desc.socketId,
      deviceType: DEVICE_TYPE,
      host: 'localhost',
      numMmio,
      numInterrupts: 0,
      acceleratorState: state,
      parent: undefined,
      extras: [
        ['interface', 'dfl'],
        ['path', desc.path],
        ['port-id', String(desc.portId)],
        ['emulated', String(desc.emulated)],
        ['language', 'javascript'],
      ],
    };
  }

  initialize() {
    this.initialized = true;
  }

  finalize() {
    for (const open of this.openPorts.values()) {
      dispose(open.port);
    }
    this.openPorts.clear();
    this.initialized = false;
  }

  /** @param {string} deviceType */
  supportsDevice(deviceType) {
    return deviceType === DEVICE_TYPE;
  }

  /** @param {Filter[]} filters @returns {Discovered[]} */
  enumerate(filters) {
    this.requireInitialized();
    /** @type {Discovered[]} */
    const found = [];
    for (const desc of listPorts()) {
      const properties = this.portProperties(desc);
      if (anyFilterMatches(filters, properties)) {
        found.push({ token: this.tokenFor(desc.path), properties });
      }
    }
    return found;
  }

  /** @param {bigint} token */
  describe(token) {
    this.requireInitialized();
    return this.portProperties(this.portForToken(token));
  }

  /** @param {bigint} token @param {OpenMode} mode */
  open(token, mode) {
    this.requireInitialized();
    const desc = this.portForToken(token);
    const port = Port.open(desc.path, mode === 'exclusive');
    this.nextHandle += 1n;
    this.openPorts.set(this.nextHandle, new OpenPort(port));
    log('debug', `opened ${desc.path} as handle ${this.nextHandle}`);
    return this.nextHandle;
  }

  /** @param {bigint} handle */
  close(handle) {
    const open = this.openPort(handle);
    this.openPorts.delete(handle);
    // Dropping the port closes it; the host then resets the AFU and removes its mappings.
    dispose(open.port);
  }

  /** @param {bigint} handle @param {number} index */
  mapMmio(handle, index) {
    const open = this.openPort(handle);
    const regions = open.port.info().numRegions;
    if (index >= regions) {
      throw errors.invalidArgument(
        `MMIO region ${index} does not exist: the port has ${regions} region(s)`,
      );
    }
    return open.port.mapRegion(index);
  }

  /** @param {bigint} handle @param {bigint} size @returns {PreparedBuffer} */
  prepareBuffer(handle, size) {
    if (size === 0n) {
      throw errors.invalidArgument('a buffer needs a size above 0');
    }
    const open = this.openPort(handle);
    const buffer = Buffer.allocate(size);
    let iova;
    try {
      iova = open.port.dmaMap(buffer);
    } catch (err) {
      dispose(buffer);
      throw err;
    }
    open.nextBuffer += 1n;
    open.buffers.set(open.nextBuffer, iova);
    return { id: open.nextBuffer, buffer, iova };
  }

  /** @param {bigint} handle @param {bigint} id */
  releaseBuffer(handle, id) {
    const open = this.openPort(handle);
    const iova = open.buffers.get(id);
    if (iova === undefined) {
      throw errors.notFound(`no buffer ${id} on handle ${handle}`);
    }
    open.buffers.delete(id);
    open.port.dmaUnmap(iova);
  }

  /** @param {bigint} handle @param {bigint} id */
  ioAddress(handle, id) {
    const iova = this.openPort(handle).buffers.get(id);
    if (iova === undefined) {
      throw errors.notFound(`no buffer ${id} on handle ${handle}`);
    }
    return iova;
  }

  /** @param {bigint} handle */
  reset(handle) {
    this.openPort(handle).port.reset();
  }
}

export const { lifecycle, discovery, fpga, offload, attributes } = exportPlugin(new DflPlugin());
