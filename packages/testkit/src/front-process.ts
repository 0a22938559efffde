// The fronts of one stack (see FrontProcess in front.ts): it listens where the stack says and balances
// over the replicas the stack names, until the stack stops it (SIGTERM) or goes away (its IPC channel closes).
import { Front, type Backend, type FrontCommand, type FrontReply } from './front.js';

const fronts = new Map<number, { front: Front; backends: Backend[] }>();
const reply = (message: FrontReply) => process.send?.(message);

process.on('message', (command: FrontCommand) => {
  if (command.type === 'backends') {
    const entry = fronts.get(command.port);
    if (entry) entry.backends = command.backends;
    return;
  }
  const entry: { front: Front; backends: Backend[] } = {
    front: new Front(command.port, () => entry.backends),
    backends: [],
  };
  fronts.set(command.port, entry);
  entry.front.start().then(
    () => reply({ type: 'listening', port: command.port }),
    (error: unknown) => reply({ type: 'failed', port: command.port, error: String(error) }),
  );
});

async function stop(): Promise<void> {
  await Promise.all([...fronts.values()].map((f) => f.front.stop()));
  process.exit(0);
}
process.on('SIGTERM', () => void stop());
process.on('disconnect', () => void stop());
