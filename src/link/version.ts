/** Recorded in every LinkedNote; bump with package.json. */
export const LINKER_VERSION = 'cuilink-0.1.0';
