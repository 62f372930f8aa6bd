/// <reference path="./accel-plugin-types.d.ts" />
declare module 'accel:plugin/lifecycle@0.2.0' {
  export function configure(config: string): void;
  export function initialize(): void;
  export function finalize(): void;
  /**
   * Cheap pre-filter before `enumerate`: can this plugin serve devices of this type?
   */
  export function supportsDevice(deviceType: string): boolean;
  /**
   * Cheap pre-filter before `enumerate`: can this plugin serve devices on this host?
   * `host` is a host name or one of the reserved filters `localhost`, `^localhost`, `*`.
   */
  export function supportsHost(host: string): boolean;
  export type Error = import('accel:plugin/types@0.2.0').Error;
}
