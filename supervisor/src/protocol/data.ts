/**
 * The protocol's data (errors, schemas, messages, run states) without its transport: the entry for code
 * that runs outside Node and imports the protocol's types only, such as the board's renderer
 * (`@runboard/supervisor/protocol/data`). Everything here is also exported by `./index.ts`.
 */
export * from './errors.ts';
export * from './schemas.ts';
export * from './prices.ts';
export * from './messages.ts';
export * from './run-state.ts';
export * from './run-env.ts';
export * from './jail.ts';
export * from './refusals.ts';
export * from './cu-events.ts';
export * from './schedules.ts';
export * from './extraction.ts';
export * from './workflow.ts';
export * from './vision.ts';
export * from './usage-fields.ts';
