// @ts-check
/**
 * The starting point of a JavaScript plugin: one device with no hardware behind it, which
 * applications can find and open. Copy this directory, then replace the device with yours:
 *
 * - `enumerate` reports your devices (the host keeps the properties: queries never call you);
 * - `open` / `close` hand out and take back handle numbers;
 * - add any other method of the `Plugin` type in sdk/js/accelhost.js your device supports:
 *   `mapMmio` and `prepareBuffer` for FPGA-style devices (see examples/js-nlb0), the offload
 *   calls for kernel launches.
 *
 * Every method you leave out answers `unsupported`. Throw `errors.notFound(...)` (or any
 * `PluginError`) to fail a call with its code; anything else thrown fails it as `internal`,
 * with its message and the file and line that threw it.
 */

import { anyFilterMatches, errors, exportPlugin, log } from 'accelhost-sdk';

/** @typedef {import('accelhost-sdk').Properties} Properties */
/** @typedef {import('accelhost-sdk').Filter} Filter */

/** @type {Properties} */
const TEMPLATE_DEVICE = {
  objectType: 'accelerator',
  name: 'template0',
  guid: { high: 0x1234n, low: 0x5678n },
  vendorId: 0x1234,
  deviceId: 0x0001,
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

class TemplatePlugin {
  constructor() {
    this.opened = 0n;
  }

  /** @param {Filter[]} filters */
  enumerate(filters) {
    return anyFilterMatches(filters, TEMPLATE_DEVICE) ? [{ token: 0n, properties: TEMPLATE_DEVICE }] : [];
  }

  /** @param {bigint} token */
  open(token) {
    if (token !== 0n) {
      throw errors.notFound(`no token ${token}`);
    }
    this.opened += 1n;
    log('info', `opened template0 (${this.opened} times)`);
    return this.opened;
  }

  close() {}
}

export const { lifecycle, discovery, fpga, offload, attributes } = exportPlugin(new TemplatePlugin());
