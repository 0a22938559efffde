// Stores the wire form of every event that has no fixture yet (run after adding an event to proto/).
import { writeMissingFixtures } from '../test/fixtures.js';

const written = writeMissingFixtures();
console.log(written.length ? `wrote ${written.join(', ')}` : 'every event already has its fixture');
