// `@nimbus/sdk/contract/names`: the contract's names and pure helpers without its schemas - statuses, property and
// entity names, the texts the platform writes, copy ids, the park reason. A browser bundle (the console's client
// components) imports these without pulling in zod, which the schemas need; everything here is also exported by
// `@nimbus/sdk/contract`. Only modules that import nothing but each other belong here (names.test.ts holds that).
export * from './statusNames.ts';
export * from './properties.ts';
export * from './messageIds.ts';
export * from './parkReason.ts';
