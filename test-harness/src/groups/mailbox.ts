import { Connection, Mailbox, type MailboxNode } from '@kq/core';
import type { ConformanceContext } from '../conformance-context';
import type { ConformanceGroup } from '../conformance-check';

/**
 * Two nodes and a client, each on its own connection (three processes, as far as the broker can tell), in a
 * mailbox namespace of the test's own. Connections close when the check ends.
 */
async function mailboxFleet(context: ConformanceContext): Promise<{
  client: Mailbox;
  nodes: string[];
  close: () => Promise<void>;
}> {
  const namespace = context.name('pidbox');
  const connections: Connection[] = [];
  const connect = async (): Promise<Connection> => {
    const connection = new Connection(await context.openTransport());
    connections.push(connection);
    return connection;
  };
  const nodes = [context.name('a@host'), context.name('b@host')];
  const listening: MailboxNode[] = [];
  for (const hostname of nodes) {
    const node = new Mailbox(await connect(), { namespace }).node(hostname, {
      ping: () => ({ ok: 'pong' }),
      echo: (args) => ({ [hostname]: args }),
    });
    await node.listen();
    listening.push(node);
  }
  const client = new Mailbox(await connect(), { namespace });
  return {
    client,
    nodes,
    close: async () => {
      await client.close();
      for (const node of listening) await node.close();
      for (const connection of connections) await connection.close();
    },
  };
}

/** A broadcast with replies reaches every node and collects one reply from each. */
export async function checkMailboxBroadcast(context: ConformanceContext): Promise<void> {
  const fleet = await mailboxFleet(context);
  try {
    const replies = await fleet.client.broadcast('ping', { reply: true, limit: 2, timeout: context.ms(5000) });
    const answered = replies.map((reply) => Object.keys(reply)[0]).sort();
    if (JSON.stringify(answered) !== JSON.stringify([...fleet.nodes].sort())) {
      throw new Error(`broadcast ping: expected replies from ${fleet.nodes.join(', ')}, got ${JSON.stringify(replies)}`);
    }
  } finally {
    await fleet.close();
  }
}

/** A call to one destination is answered by that node only, with the handler's value. */
export async function checkMailboxDestination(context: ConformanceContext): Promise<void> {
  const fleet = await mailboxFleet(context);
  try {
    const target = fleet.nodes[1] as string;
    const replies = await fleet.client.call([target], 'echo', { x: 1 }, { timeout: context.ms(5000) });
    const expected = [{ [target]: { [target]: { x: 1 } } }];
    if (JSON.stringify(replies) !== JSON.stringify(expected)) {
      throw new Error(`call to ${target}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(replies)}`);
    }
    const unknown = await fleet.client.call([target], 'no_such_command', {}, { timeout: context.ms(5000) });
    if (JSON.stringify(unknown) !== JSON.stringify([{ [target]: { error: "KeyError('no_such_command')" } }])) {
      throw new Error(`unknown command: expected Celery's KeyError reply, got ${JSON.stringify(unknown)}`);
    }
  } finally {
    await fleet.close();
  }
}

/**
 * A broadcast with replies that no node can receive (no queue bound to the mailbox exchange) ends at once with no
 * replies, instead of waiting out its timeout: the mailbox publishes it mandatory, so the transport must report a
 * fanout publish that reaches no queue as `UnroutableError` (a worker starting alone skips Mingle's wait this way).
 */
export async function checkMailboxNobodyListens(context: ConformanceContext): Promise<void> {
  const connection = new Connection(await context.openTransport());
  const client = new Mailbox(connection, { namespace: context.name('lonely') });
  try {
    // Far longer than the check may take: only an answer at once passes.
    const replies = await client.broadcast('ping', { reply: true, timeout: 3_600_000 });
    if (replies.length !== 0) throw new Error(`broadcast to nobody: expected no replies, got ${JSON.stringify(replies)}`);
  } finally {
    await client.close();
    await connection.close();
  }
}

/**
 * A node that stopped no longer holds up broadcasts: on a live fanout its auto-delete queue (and binding) goes when
 * its channel closes, as Kombu's Redis channel deletes it, so the next broadcast with replies ends at once instead of
 * waiting for a node that is gone (what a restarted worker's Mingle would otherwise do).
 */
export async function checkMailboxNodeLeaves(context: ConformanceContext): Promise<void> {
  const namespace = context.name('leaving');
  const nodeConnection = new Connection(await context.openTransport());
  const node = new Mailbox(nodeConnection, { namespace }).node(context.name('gone@host'), { ping: () => ({ ok: 'pong' }) });
  await node.listen();
  await node.close();
  await nodeConnection.close();
  const connection = new Connection(await context.openTransport());
  const client = new Mailbox(connection, { namespace });
  try {
    const replies = await client.broadcast('ping', { reply: true, timeout: 3_600_000 });
    if (replies.length !== 0) throw new Error(`broadcast after the node left: expected no replies, got ${JSON.stringify(replies)}`);
  } finally {
    await client.close();
    await connection.close();
  }
}

export const mailboxGroup: ConformanceGroup = {
  name: 'mailbox (pidbox remote control)',
  checks: [
    {
      name: 'a broadcast is answered by every node',
      run: checkMailboxBroadcast,
      skipReason: (setup) => (setup.capabilities.fanout ? undefined : 'transport reports fanout: null'),
    },
    {
      name: 'a call reaches its destination only, and unknown commands get KeyError',
      run: checkMailboxDestination,
      skipReason: (setup) => (setup.capabilities.fanout ? undefined : 'transport reports fanout: null'),
    },
    {
      name: 'a broadcast nobody listens to ends at once with no replies',
      run: checkMailboxNobodyListens,
      skipReason: (setup) => (setup.capabilities.fanout ? undefined : 'transport reports fanout: null'),
    },
    {
      name: 'a node that left no longer holds up a broadcast',
      run: checkMailboxNodeLeaves,
      skipReason: (setup) =>
        setup.capabilities.fanout === 'live' ? undefined : `transport reports fanout: ${String(setup.capabilities.fanout)} (auto-delete is the broker's)`,
    },
  ],
};
