/// <reference path="./accel-plugin-types.d.ts" />
declare module 'accel:plugin/events@0.2.0' {
  export type Error = import('accel:plugin/types@0.2.0').Error;
  /**
   * # Variants
   * 
   * ## `"pending"`
   * 
   * ## `"complete"`
   * 
   * ## `"failed"`
   */
  export type EventState = 'pending' | 'complete' | 'failed';
  
  export class Event implements Disposable {
    /**
     * This type does not have a public constructor.
     */
    private constructor();
    /**
    * An event that is already complete, for work the plugin finished synchronously.
    */
    static completed(): Event;
    /**
    * Another handle to the same completion, so a plugin can hand one to the host and keep
    * one (as the dependency of the next command of an in-order queue).
    */
    duplicate(): Event;
    /**
    * An event that already failed with `error`.
    */
    static failed(error: Error): Event;
    state(): EventState;
    /**
    * Waits on the host until the event is no longer pending or the timeout (capped
    * by the call's deadline) passes.
    */
    wait(timeoutNs: bigint): void;
    [Symbol.dispose](): void;
  }
}
