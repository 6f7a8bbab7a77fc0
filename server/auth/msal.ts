// The MSAL confidential client for the configured provider: Entra ID in MSAL's default (AAD) protocol mode, any
// other OpenID provider in ProtocolMode.OIDC with the issuer as authority. MSAL talks to the provider through
// providerRequest, so NIMBUS_AUTH_CA_FILE is honoured (MSAL insists on https authorities; a provider behind a
// private CA - or the tests' self-signed one - needs it).
import {
  ConfidentialClientApplication,
  LogLevel,
  ProtocolMode,
  type INetworkModule,
  type NetworkRequestOptions,
  type NetworkResponse,
} from '@azure/msal-node';
import type { AuthMode, ProviderConfig } from './config.ts';
import { providerRequest } from './providerFetch.ts';
import { log } from '../log.ts';

class ProviderNetworkClient implements INetworkModule {
  sendGetRequestAsync<T>(url: string, options?: NetworkRequestOptions): Promise<NetworkResponse<T>> {
    return this.send<T>('GET', url, options);
  }
  sendPostRequestAsync<T>(url: string, options?: NetworkRequestOptions): Promise<NetworkResponse<T>> {
    return this.send<T>('POST', url, options);
  }
  private async send<T>(method: 'GET' | 'POST', url: string, options?: NetworkRequestOptions): Promise<NetworkResponse<T>> {
    const res = await providerRequest(url, {
      method,
      ...(options?.headers ? { headers: options.headers } : {}),
      ...(options?.body !== undefined ? { body: options.body } : {}),
    });
    let body: unknown;
    try {
      body = JSON.parse(res.body);
    } catch {
      body = {};
    }
    return { status: res.status, headers: res.headers, body: body as T };
  }
}

const clients = new Map<string, ConfidentialClientApplication>();

/** One client per provider configuration (it caches the provider's metadata). */
export function msalClient(mode: Exclude<AuthMode, 'off'>, provider: ProviderConfig): ConfidentialClientApplication {
  const key = JSON.stringify([mode, provider.authority, provider.clientId, provider.clientSecret]);
  let client = clients.get(key);
  if (!client) {
    client = new ConfidentialClientApplication({
      auth: {
        clientId: provider.clientId,
        clientSecret: provider.clientSecret,
        authority: provider.authority,
        // An OIDC provider is not one of Microsoft's clouds: naming it known skips Entra instance discovery.
        // So is an Entra host given by NIMBUS_AUTH_ENTRA_HOST (a national cloud, or the tests' look-alike).
        ...(mode === 'oidc' || !provider.authority.startsWith('https://login.microsoftonline.com/')
          ? { knownAuthorities: [new URL(provider.authority).host] }
          : {}),
      },
      system: {
        networkClient: new ProviderNetworkClient(),
        ...(mode === 'oidc' ? { protocolMode: ProtocolMode.OIDC } : {}),
        loggerOptions: {
          // PII (tokens, claims, user names) stays out of the logs.
          piiLoggingEnabled: false,
          logLevel: LogLevel.Warning,
          loggerCallback: (level, message, containsPii) => {
            // Non-Entra providers send no client_info; MSAL warns about it on every sign-in.
            if (containsPii || message.includes('No client info in response')) return;
            if (level === LogLevel.Error) log.error({ msal: message }, 'MSAL');
            else log.warn({ msal: message }, 'MSAL');
          },
        },
      },
    });
    clients.set(key, client);
  }
  return client;
}
