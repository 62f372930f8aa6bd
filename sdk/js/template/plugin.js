// @ts-check
// A plugin with one device, which applications find and open. The SDK's defaults cover the
// rest: every method left out answers `unsupported` (`close` succeeds). Add your device's
// methods of the SDK's `Plugin` type (`mapMmio`, `prepareBuffer`, the offload calls);
// `--from nlb0` starts from a plugin that drives a real card.

import { accelerator, discover, exportPlugin } from 'accelhost-sdk';

const DEVICE = accelerator('template0', { high: 0x1234n, low: 0x5678n });

export const { lifecycle, discovery, fpga, offload, attributes } = exportPlugin({
  enumerate(filters) {
    return discover(filters, [DEVICE]);
  },
  open(token) {
    return token + 1n;
  },
});
