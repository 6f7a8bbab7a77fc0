// Entry point `@nimbus/sdk/cosmos`: the durable inbox on Cosmos DB and the client factory it connects with. Kept
// out of the main entry because it loads @azure/cosmos (about half a second and ~28 MB), which a host without a
// durable inbox should not pay.
export * from './cosmosClient.ts';
export * from './cosmosInbox.ts';
