declare module 'accel:plugin/log@0.2.0' {
  export function log(level: Level, message: string): void;
  /**
   * # Variants
   * 
   * ## `"error"`
   * 
   * ## `"warn"`
   * 
   * ## `"info"`
   * 
   * ## `"debug"`
   * 
   * ## `"trace"`
   */
  export type Level = 'error' | 'warn' | 'info' | 'debug' | 'trace';
}
