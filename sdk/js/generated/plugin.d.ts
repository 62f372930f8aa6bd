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
/// <reference path="./interfaces/accel-plugin-types.d.ts" />
/// <reference path="./interfaces/accel-plugin-xocl.d.ts" />
declare module 'accel:plugin/plugin@0.1.0' {
  export type * as AccelPluginClock010 from 'accel:plugin/clock@0.1.0'; // import accel:plugin/clock@0.1.0
  export type * as AccelPluginCxl010 from 'accel:plugin/cxl@0.1.0'; // import accel:plugin/cxl@0.1.0
  export type * as AccelPluginDfl010 from 'accel:plugin/dfl@0.1.0'; // import accel:plugin/dfl@0.1.0
  export type * as AccelPluginDma010 from 'accel:plugin/dma@0.1.0'; // import accel:plugin/dma@0.1.0
  export type * as AccelPluginEvents010 from 'accel:plugin/events@0.1.0'; // import accel:plugin/events@0.1.0
  export type * as AccelPluginImage010 from 'accel:plugin/image@0.1.0'; // import accel:plugin/image@0.1.0
  export type * as AccelPluginLog010 from 'accel:plugin/log@0.1.0'; // import accel:plugin/log@0.1.0
  export type * as AccelPluginMmio010 from 'accel:plugin/mmio@0.1.0'; // import accel:plugin/mmio@0.1.0
  export type * as AccelPluginTypes010 from 'accel:plugin/types@0.1.0'; // import accel:plugin/types@0.1.0
  export type * as AccelPluginXocl010 from 'accel:plugin/xocl@0.1.0'; // import accel:plugin/xocl@0.1.0
  export * as lifecycle from 'accel:plugin/lifecycle@0.1.0'; // export accel:plugin/lifecycle@0.1.0
  export * as discovery from 'accel:plugin/discovery@0.1.0'; // export accel:plugin/discovery@0.1.0
  export * as fpga from 'accel:plugin/fpga@0.1.0'; // export accel:plugin/fpga@0.1.0
  export * as offload from 'accel:plugin/offload@0.1.0'; // export accel:plugin/offload@0.1.0
}
