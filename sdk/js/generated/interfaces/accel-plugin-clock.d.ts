declare module 'accel:plugin/clock@0.2.0' {
  /**
   * Nanoseconds since an arbitrary fixed point; never goes backwards.
   */
  export function nowNs(): bigint;
}
