/// <reference path="./interfaces/accel-plugin-attributes.d.ts" />
/// <reference path="./interfaces/accel-plugin-clock.d.ts" />
/// <reference path="./interfaces/accel-plugin-cxl.d.ts" />
/// <reference path="./interfaces/accel-plugin-dfl.d.ts" />
/// <reference path="./interfaces/accel-plugin-discovery.d.ts" />
/// <reference path="./interfaces/accel-plugin-dma.d.ts" />
/// <reference path="./interfaces/accel-plugin-events.d.ts" />
/// <reference path="./interfaces/accel-plugin-fpga.d.ts" />
/// <reference path="./interfaces/accel-plugin-image.d.ts" />
/// <reference path="./interfaces/accel-plugin-lifecycle.d.ts" />
/// <reference path="./interfaces/accel-plugin-log.d.ts" />
/// <reference path="./interfaces/accel-plugin-mmio.d.ts" />
/// <reference path="./interfaces/accel-plugin-offload.d.ts" />
/// <reference path="./interfaces/accel-plugin-remote.d.ts" />
/// <reference path="./interfaces/accel-plugin-types.d.ts" />
/// <reference path="./interfaces/accel-plugin-xocl.d.ts" />
declare module 'accel:plugin/plugin@0.2.0' {
  export type * as AccelPluginClock020 from 'accel:plugin/clock@0.2.0'; // import accel:plugin/clock@0.2.0
  export type * as AccelPluginCxl020 from 'accel:plugin/cxl@0.2.0'; // import accel:plugin/cxl@0.2.0
  export type * as AccelPluginDfl020 from 'accel:plugin/dfl@0.2.0'; // import accel:plugin/dfl@0.2.0
  export type * as AccelPluginDma020 from 'accel:plugin/dma@0.2.0'; // import accel:plugin/dma@0.2.0
  export type * as AccelPluginEvents020 from 'accel:plugin/events@0.2.0'; // import accel:plugin/events@0.2.0
  export type * as AccelPluginImage020 from 'accel:plugin/image@0.2.0'; // import accel:plugin/image@0.2.0
  export type * as AccelPluginLog020 from 'accel:plugin/log@0.2.0'; // import accel:plugin/log@0.2.0
  export type * as AccelPluginMmio020 from 'accel:plugin/mmio@0.2.0'; // import accel:plugin/mmio@0.2.0
  export type * as AccelPluginRemote020 from 'accel:plugin/remote@0.2.0'; // import accel:plugin/remote@0.2.0
  export type * as AccelPluginTypes020 from 'accel:plugin/types@0.2.0'; // import accel:plugin/types@0.2.0
  export type * as AccelPluginXocl020 from 'accel:plugin/xocl@0.2.0'; // import accel:plugin/xocl@0.2.0
  export * as fpga from 'accel:plugin/fpga@0.2.0'; // export accel:plugin/fpga@0.2.0
  export * as offload from 'accel:plugin/offload@0.2.0'; // export accel:plugin/offload@0.2.0
  export * as attributes from 'accel:plugin/attributes@0.2.0'; // export accel:plugin/attributes@0.2.0
  export * as lifecycle from 'accel:plugin/lifecycle@0.2.0'; // export accel:plugin/lifecycle@0.2.0
  export * as discovery from 'accel:plugin/discovery@0.2.0'; // export accel:plugin/discovery@0.2.0
}
