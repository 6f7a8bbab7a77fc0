// The Microsoft Entra credential NimBus uses when a Service Bus namespace or a Cosmos DB account is named without
// a key: DefaultAzureCredential (managed identity in Azure, `az login` / environment credentials on a developer's
// machine). @azure/identity is loaded on the first token request, not at import: a process that uses connection
// strings and keys never loads it (it pulls in MSAL and its dependencies).
// The credential types come from @azure/core-auth (what the Azure clients themselves accept), so the package's
// declarations do not need @azure/identity installed.
import type { AccessToken, GetTokenOptions, TokenCredential } from '@azure/core-auth';

export type { TokenCredential };

/** A TokenCredential that creates DefaultAzureCredential on first use and delegates every request to it. */
export class LazyDefaultAzureCredential implements TokenCredential {
  #inner: Promise<TokenCredential> | undefined;

  /** Whether @azure/identity has been asked for a credential yet (tests: it must not be, on the key path). */
  get loaded(): boolean {
    return this.#inner !== undefined;
  }

  async getToken(scopes: string | string[], options?: GetTokenOptions): Promise<AccessToken | null> {
    this.#inner ??= import('@azure/identity').then(
      ({ DefaultAzureCredential }) =>
        // AZURE_CLIENT_ID selects a user-assigned managed identity (the library reads it itself when set).
        new DefaultAzureCredential(),
    );
    const inner = await this.#inner;
    return inner.getToken(scopes, options);
  }
}

let shared: LazyDefaultAzureCredential | undefined;

/** One credential per process: its token cache is shared by the Service Bus and Cosmos clients. */
export function defaultAzureCredential(): TokenCredential {
  return (shared ??= new LazyDefaultAzureCredential());
}
