// The storefront's traffic: a deterministic plan of customer and order events (seeded), and a runner that
// publishes it at a steady rate. The plan opens with one event of every kind the demo shows (handled, retried,
// failed until resubmitted, parked behind a failure, handed off, dead-lettered, unsupported), so every page has
// something to show within seconds, and then continues at random from the seed.
import type { Logger } from 'pino';
import type { Publisher } from '@nimbus/sdk';
import { pick, seededRandom } from './random.ts';
import { CREDIT_LIMIT, DemoEventType, crmThrottles, invoiceIdFor, ledgerJobOutcome } from './rules.ts';

export type Scenario =
  | 'customer-registered'
  | 'customer-updated'
  | 'order'
  | 'order-credit-approval'
  | 'order-malformed-address'
  | 'order-cancelled';

export interface PlannedEvent {
  eventTypeId: string;
  /** Sessions are per customer: a customer's events are handled in order, and one failure parks the rest. */
  sessionId: string;
  payload: Record<string, unknown>;
  scenario: Scenario;
}

interface Customer {
  customerId: string;
  name: string;
  email: string;
  country: string;
  openOrders: string[];
}

const FIRST_NAMES = [
  'Ada',
  'Grace',
  'Alan',
  'Linus',
  'Margaret',
  'Edsger',
  'Barbara',
  'Ken',
  'Frances',
  'Niklaus',
];
const LAST_NAMES = [
  'Lovelace',
  'Hopper',
  'Turing',
  'Torvalds',
  'Hamilton',
  'Dijkstra',
  'Liskov',
  'Thompson',
  'Allen',
  'Wirth',
];
const ADDRESSES = [
  { street: 'Vesterbrogade 1', postalCode: '1620', city: 'København', country: 'DK' },
  { street: 'Drottninggatan 12', postalCode: '111 51', city: 'Stockholm', country: 'SE' },
  { street: 'Karl Johans gate 5', postalCode: '0154', city: 'Oslo', country: 'NO' },
  { street: 'Hauptstraße 8', postalCode: '10115', city: 'Berlin', country: 'DE' },
  { street: 'Damrak 20', postalCode: '1012 LG', city: 'Amsterdam', country: 'NL' },
];
const PRODUCTS = [
  { sku: 'MUG-BLUE', unitPrice: 9.5 },
  { sku: 'TEE-L-BLACK', unitPrice: 19 },
  { sku: 'HOODIE-M-GREY', unitPrice: 49 },
  { sku: 'BACKPACK-20L', unitPrice: 65 },
  { sku: 'SNEAKER-42', unitPrice: 89 },
  { sku: 'WATCH-SLIM', unitPrice: 149 },
];
/** How many of the most recent customers place orders: older sessions (and any blocked ones) fade out. */
const ACTIVE_CUSTOMERS = 25;

const round2 = (n: number) => Math.round(n * 100) / 100;

export class TrafficPlanner {
  private readonly random: () => number;
  private readonly customers: Customer[] = [];
  private nextCustomer = 2001;
  private nextOrder = 10001;
  private readonly opening: PlannedEvent[];

  /**
   * `operatorCases` (default 1): how many orders in the opening wait for an operator - credit-approval orders that
   * billing fails (each with a cancellation parked behind it) and large orders whose ledger import is slow (a
   * pending ERP handoff) - each for a customer of its own, so each blocks its own session. The browser test asks
   * for several, to resubmit one, skip another and edit a third.
   */
  constructor(seed: number, options: { operatorCases?: number } = {}) {
    this.random = seededRandom(seed);
    this.opening = this.planOpening(Math.max(1, Math.floor(options.operatorCases ?? 1)));
  }

  next(): PlannedEvent {
    const opening = this.opening.shift();
    if (opening) return opening;
    // Register faster while there are few customers: a handful of customers would share every failure's session.
    const register = this.customers.length < ACTIVE_CUSTOMERS / 2 ? 0.4 : 0.1;
    const r = this.random();
    if (r < register) return this.register();
    if (r < register + 0.08) return this.update(this.activeCustomer());
    if (r < register + 0.16) {
      const customer = this.activeCustomer();
      if (customer.openOrders.length > 0)
        return this.cancel(customer, pick(this.random, customer.openOrders));
    }
    const variant = this.random();
    if (variant < 0.03) return this.order(this.activeCustomer(), 'order-credit-approval');
    if (variant < 0.08) return this.order(this.activeCustomer(), 'order-malformed-address');
    return this.order(this.activeCustomer(), 'order');
  }

  /**
   * One event of every kind, in an order that makes each outcome happen: a registration and a large order whose
   * CRM copy is throttled once (Failed, then Completed by the retry) and whose invoice goes to a slow ledger import
   * (a pending handoff the ERP's later events park behind); an order above the credit limit (billing fails until
   * an operator resubmits) followed by its cancellation (parked behind it); a profile update (the CRM has no
   * handler: Unsupported); an order with a broken address (shipping dead-letters it).
   */
  private planOpening(operatorCases: number): PlannedEvent[] {
    const first = this.register();
    const firstCustomer = this.customers[0]!;
    const bigOrder = this.order(
      firstCustomer,
      'order',
      (orderId) => crmThrottles(orderId) && ledgerJobOutcome(invoiceIdFor(orderId)) === 'slow',
      'large',
    );
    const second = this.register();
    const secondCustomer = this.customers[1]!;
    const creditOrder = this.order(secondCustomer, 'order-credit-approval');
    const cancellation = this.cancel(secondCustomer, String(creditOrder.payload.orderId));
    const opening = [
      first,
      bigOrder,
      second,
      creditOrder,
      cancellation,
      this.update(firstCustomer),
      this.order(firstCustomer, 'order-malformed-address'),
    ];
    // Further cases come after the standard opening, so the default plan stays what it always was.
    for (let i = 1; i < operatorCases; i++) {
      opening.push(this.register());
      const handoffCustomer = this.customers.at(-1)!;
      opening.push(
        this.order(
          handoffCustomer,
          'order',
          (orderId) => ledgerJobOutcome(invoiceIdFor(orderId)) === 'slow',
          'large',
        ),
      );
      opening.push(this.register());
      const creditCustomer = this.customers.at(-1)!;
      const credit = this.order(creditCustomer, 'order-credit-approval');
      opening.push(credit, this.cancel(creditCustomer, String(credit.payload.orderId)));
    }
    return opening;
  }

  private activeCustomer(): Customer {
    return pick(this.random, this.customers.slice(-ACTIVE_CUSTOMERS));
  }

  private register(): PlannedEvent {
    const first = pick(this.random, FIRST_NAMES);
    const last = pick(this.random, LAST_NAMES);
    const customerId = `CUST-${this.nextCustomer++}`;
    const customer: Customer = {
      customerId,
      name: `${first} ${last}`,
      email: `${first}.${last}.${customerId.slice(5)}@example.com`.toLowerCase(),
      country: pick(this.random, ADDRESSES).country,
      openOrders: [],
    };
    this.customers.push(customer);
    // Customers who stopped ordering are forgotten, so a demo that runs for days keeps a small plan.
    if (this.customers.length > ACTIVE_CUSTOMERS * 2) this.customers.shift();
    return {
      eventTypeId: DemoEventType.CustomerRegistered,
      sessionId: customerId,
      scenario: 'customer-registered',
      payload: { customerId, email: customer.email, name: customer.name, country: customer.country },
    };
  }

  private update(customer: Customer): PlannedEvent {
    const phone = `+45 ${Math.floor(this.random() * 90_000_000 + 10_000_000)}`;
    return {
      eventTypeId: DemoEventType.CustomerUpdated,
      sessionId: customer.customerId,
      scenario: 'customer-updated',
      payload: { customerId: customer.customerId, changes: { phone } },
    };
  }

  private cancel(customer: Customer, orderId: string): PlannedEvent {
    customer.openOrders = customer.openOrders.filter((o) => o !== orderId);
    return {
      eventTypeId: DemoEventType.OrderCancelled,
      sessionId: customer.customerId,
      scenario: 'order-cancelled',
      payload: {
        orderId,
        customerId: customer.customerId,
        reason: pick(this.random, ['Customer request', 'Payment timeout', 'Out of stock']),
      },
    };
  }

  private order(
    customer: Customer,
    scenario: 'order' | 'order-credit-approval' | 'order-malformed-address',
    idPredicate?: (orderId: string) => boolean,
    size: 'normal' | 'large' = 'normal',
  ): PlannedEvent {
    let orderId = `ORD-${this.nextOrder++}`;
    // The opening needs an order with particular properties; numbers are skipped until one fits.
    if (idPredicate) while (!idPredicate(orderId)) orderId = `ORD-${this.nextOrder++}`;
    let lines: Array<{ sku: string; quantity: number; unitPrice: number }>;
    let paymentMethod: string;
    if (scenario === 'order-credit-approval') {
      // A business customer ordering office chairs on invoice: above the credit limit.
      const quantity = 5 + Math.floor(this.random() * 8);
      lines = [{ sku: 'DESK-CHAIR', quantity, unitPrice: 129 }];
      paymentMethod = 'invoice';
    } else if (size === 'large') {
      lines = [{ sku: 'WATCH-SLIM', quantity: 2, unitPrice: 149 }];
      paymentMethod = 'card';
    } else {
      const count = 1 + Math.floor(this.random() * 3);
      lines = Array.from({ length: count }, () => {
        const product = pick(this.random, PRODUCTS);
        return {
          sku: product.sku,
          quantity: 1 + Math.floor(this.random() * 3),
          unitPrice: product.unitPrice,
        };
      });
      paymentMethod = this.random() < 0.25 ? 'invoice' : 'card';
    }
    const total = round2(lines.reduce((sum, l) => sum + l.quantity * l.unitPrice, 0));
    if (paymentMethod === 'invoice' && total > CREDIT_LIMIT && scenario !== 'order-credit-approval')
      paymentMethod = 'card';
    const address = { ...pick(this.random, ADDRESSES) };
    // The storefront's address form bug: the postal code is lost on the way.
    const shippingAddress: Record<string, string> =
      scenario === 'order-malformed-address'
        ? { street: address.street, city: address.city, country: address.country }
        : address;
    customer.openOrders.push(orderId);
    if (customer.openOrders.length > 5) customer.openOrders.shift();
    return {
      eventTypeId: DemoEventType.OrderPlaced,
      sessionId: customer.customerId,
      scenario,
      payload: {
        orderId,
        customerId: customer.customerId,
        lines,
        total,
        currency: 'EUR',
        paymentMethod,
        shippingAddress,
      },
    };
  }
}

export interface TrafficOptions {
  publisher: Publisher;
  seed: number;
  /** Events per second; 0 publishes nothing. */
  ratePerSecond: number;
  /** Orders in the opening that wait for an operator (see TrafficPlanner). Default 1. */
  operatorCases?: number;
  log: Logger;
  now?: () => Date;
  /** Publishes this many events, then stops (the endpoints go on handling). Default: no end. */
  limit?: number;
  /** Told of every event the broker accepted (`npm run demo`'s NIMBUS_DEMO_PUBLISHED_LOG, the scale-out test). */
  onPublished?: (event: { messageId: string; sessionId: string; eventTypeId: string; scenario: Scenario }) => void;
}

export interface RunningTraffic {
  /** How many events were published so far. */
  readonly published: number;
  stop(): Promise<void>;
}

/** Publishes the plan at `ratePerSecond`, one event at a time; a failed publish is logged and the plan moves on. */
export function startTraffic(options: TrafficOptions): RunningTraffic {
  const planner = new TrafficPlanner(options.seed, { operatorCases: options.operatorCases });
  const now = options.now ?? (() => new Date());
  const intervalMs = options.ratePerSecond > 0 ? 1000 / options.ratePerSecond : 0;
  let published = 0;
  let failures = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> = Promise.resolve();

  let attempted = 0;
  const tick = () => {
    if (stopped) return;
    if (options.limit !== undefined && attempted >= options.limit) {
      options.log.info({ published }, 'demo traffic finished (its event limit reached)');
      return;
    }
    attempted++;
    const started = Date.now();
    const event = planner.next();
    const at = now().toISOString();
    const stamp =
      event.eventTypeId === DemoEventType.OrderPlaced
        ? { placedAt: at }
        : event.eventTypeId === DemoEventType.OrderCancelled
          ? { cancelledAt: at }
          : { occurredAt: at };
    inFlight = options.publisher
      .publish(event.eventTypeId, { ...event.payload, ...stamp }, { sessionId: event.sessionId })
      .then(
        (sent) => {
          published++;
          options.onPublished?.({
            messageId: sent.messageId,
            sessionId: sent.sessionId,
            eventTypeId: event.eventTypeId,
            scenario: event.scenario,
          });
          if (published === 1 || published % 100 === 0)
            options.log.info({ published }, 'demo traffic running');
        },
        (error: unknown) => {
          failures++;
          // Identity only: no payload in the log.
          if (!stopped && (failures === 1 || failures % 20 === 0)) {
            options.log.warn(
              {
                eventTypeId: event.eventTypeId,
                sessionId: event.sessionId,
                failures,
                err: (error as Error).message,
              },
              'publishing a demo event failed',
            );
          }
        },
      )
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, Math.max(0, intervalMs - (Date.now() - started)));
      });
  };
  if (intervalMs > 0) timer = setTimeout(tick, 0);

  return {
    get published() {
      return published;
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await inFlight;
    },
  };
}
