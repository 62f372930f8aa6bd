declare module 'accel:plugin/log@0.1.0' {
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
