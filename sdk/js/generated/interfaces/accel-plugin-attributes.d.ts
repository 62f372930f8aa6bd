/// <reference path="./accel-plugin-types.d.ts" />
declare module 'accel:plugin/attributes@0.2.0' {
  /**
   * Every attribute of the device behind `token`.
   */
  export function listAttributes(token: bigint): Array<AttributeInfo>;
  /**
   * The current value of attribute `name`.
   */
  export function readAttribute(token: bigint, name: string): string;
  /**
   * Writes `value` to attribute `name` (for example an error register's value, to clear it).
   */
  export function writeAttribute(token: bigint, name: string, value: string): void;
  export type Error = import('accel:plugin/types@0.2.0').Error;
  export interface AttributeInfo {
    /**
     * The path, such as `errors/first_error`.
     */
    name: string,
    /**
     * Whether `write-attribute` may change it.
     */
    writable: boolean,
  }
}
