/**
 * docs/deploy.md's ports of the image against what defines them: docker/Dockerfile's EXPOSE and the
 * image's docker/config.properties (read as the server reads it). The page said the image served gRPC
 * on 7070 when nothing in it did.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { parseAddress } from '../../src/config/address';
import { parseProperties } from '../../src/config/properties';
import { codeBlocks, kRepoRoot } from '../helpers/docs-examples';

const read = (file: string) => fs.readFileSync(path.join(kRepoRoot, file), 'utf8');

function portOf(raw: string): number {
  const address = parseAddress(raw);
  assert.ok(!('problem' in address) && address.scheme !== 'unix', raw);
  return address.port;
}

describe("docs/deploy.md: the image's ports", () => {
  it('are the ports the Dockerfile exposes and the image config listens on, with no gRPC port', () => {
    const exposed = [...read('docker/Dockerfile').matchAll(/^EXPOSE\s+(.+)$/gm)].flatMap((m) =>
      m[1]
        .trim()
        .split(/\s+/)
        .map((p) => Number(p.replace(/\/tcp$/, ''))),
    );
    const config = parseProperties(read('docker/config.properties'), 'docker/config.properties');
    const listening = [...new Set(['inference_address', 'management_address'].map((k) => portOf(config.get(k)!)))];
    assert.equal(config.has('grpc_inference_port'), false, 'the image config serves no gRPC');
    assert.deepEqual(exposed, listening);

    const page = read('docs/deploy.md');
    const said = /the image serves HTTP on (\d+) only, unless its config sets\s+`grpc_inference_port`/.exec(page);
    assert.ok(said, 'deploy.md says which port the image serves');
    assert.deepEqual([Number(said[1])], listening);
    const npmStart = /`npm start`'s `config.properties` sets\s+`grpc_inference_port=(\d+)`/.exec(page);
    assert.ok(npmStart, "deploy.md says which gRPC port npm start's config serves");
    assert.equal(parseProperties(read('config.properties')).get('grpc_inference_port'), npmStart[1]);
    const run = codeBlocks('docs/deploy.md', 'sh').find((b) => /^docker run .* serve$/m.test(b));
    assert.ok(run, '"Run locally" has the docker run command');
    const published = [...run.matchAll(/-p (?:[\d.]+:)?\d+:(\d+)/g)].map((m) => Number(m[1]));
    assert.deepEqual(published, listening, 'docker run publishes the port the image listens on');
  });
});
