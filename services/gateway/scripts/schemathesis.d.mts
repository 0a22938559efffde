export const SCHEMATHESIS_VERSION: string;
export const venv: string;
export const schemathesisBin: string;
/** The path of the schemathesis executable, installed first when it is not there in the pinned version. */
export function ensureSchemathesis(): string;
