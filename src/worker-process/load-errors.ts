/**
 * Why onnxruntime refused a model, in terms its owner can act on (what is at fault, what this build
 * supports, how to re-export); onnxruntime's own message stays in the server log.
 */
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { invalidModel, MmeError, quote } from '../errors';
import type { OnnxFile } from './onnx-file';
import { domainName, kKnownDomains, maxSupportedOpset } from './opset-support';
import { withFile } from './protobuf-file';

const kIrVersion = /Unsupported model IR version: (\d+), max supported IR version: (\d+)/;
/** The operator onnxruntime names when it has no kernel or schema for a node. */
const kOperatorFaults = [
  /No Op registered for (\w+) with domain_version of (\d+)/,
  /Op registered for (\w+) is deprecated in domain_version of (\d+)/,
  /Could not find an implementation for (\w+)\((\d+)\)/,
  /[\w.]*:(\w+)\((-?\d+)\) is not a registered function\/op/,
];

/** External data outside the model directory; onnxruntime's message goes on to show a server path, not said. */
const kExternalDataEscape =
  /External data path validation failed for initializer: (.*?)\. Error: External data path escapes model directory\. External data path: "([^"]*)"/;

/** An MmeError for a load failure this module recognises; null for anything else. */
export async function explainLoadFailure(message: string, model: OnnxFile): Promise<MmeError | null> {
  const escape = kExternalDataEscape.exec(message);
  if (escape) {
    return invalidModel(
      `initializer ${quote(escape[1])} keeps its data in ${quote(escape[2])}, which is outside the model directory (External data path escapes model directory); keep external data files inside the model directory, as regular files named by relative paths`,
    );
  }
  const runtime = `onnxruntime ${ort.env.versions.node ?? ''}`.trim();
  const ir = kIrVersion.exec(message);
  if (ir) {
    return invalidModel(
      `the model has IR version ${ir[1]}, but ${runtime} reads IR versions up to ${ir[2]}; convert it again with an older onnx package or a lower target_opset`,
    );
  }
  const ranges = await Promise.all(
    kKnownDomains.map(async (domain) => ({ domain, max: await maxSupportedOpset(domain) })),
  );
  const rangeText = ranges.map((r) => `${domainName(r.domain)} opsets 1 to ${r.max}`).join(', ');
  for (const r of ranges) {
    const imported = model.opsets.get(r.domain);
    if (imported !== undefined && imported > r.max) {
      return invalidModel(
        `the model imports opset ${imported} of ${domainName(r.domain)}, but ${runtime} supports ${rangeText}; convert it again with a supported target opset, e.g. skl2onnx / onnxmltools target_opset={${ranges.map((d) => `'${d.domain}': ${d.max}`).join(', ')}}`,
      );
    }
  }
  for (const pattern of kOperatorFaults) {
    const m = pattern.exec(message);
    if (!m) continue;
    const domain = model.nodes.find((n) => n.opType === m[1])?.domain ?? '';
    const version = model.opsets.get(domain);
    const where = `${domainName(domain)}${version === undefined ? '' : ` opset ${version}`}`;
    const custom = (kKnownDomains as readonly string[]).includes(domain)
      ? ''
      : `, and no custom operator library for ${domainName(domain)} is loaded`;
    return invalidModel(
      `the model uses operator ${m[1]} of ${where}, which ${runtime} does not have (it supports ${rangeText}${custom}); convert the model again with another target opset, or replace the operator`,
    );
  }
  return null;
}

/** How a Git LFS pointer file starts: what a clone without git-lfs leaves in place of the model. */
const kLfsPointer = 'version https://git-lfs';

/** onnxruntime could not parse `onnxPath` at all: what to check, from its size and first bytes. */
export function unparsedModel(onnxPath: string, ortMessage: string): MmeError {
  const name = path.basename(onnxPath);
  const reason = /failed:\s*(.*)$/s.exec(ortMessage)?.[1].trim() ?? 'it could not parse the file';
  let size = 0;
  let head = '';
  try {
    withFile(onnxPath, (file) => {
      size = file.size;
      head = file.bytes({ start: 0, payload: 0, end: Math.min(64, size) }).toString('latin1');
    });
  } catch {
    // Unreadable now: the general advice below still holds.
  }
  const check = head.startsWith(kLfsPointer)
    ? `it is a Git LFS pointer (${size} bytes), not the model: fetch the file itself (git lfs pull) and load again`
    : size === 0
      ? 'it is empty: copy or download the model again'
      : `check that it is whole (${size} bytes here: a truncated download or copy fails like this), that it is not a Git LFS pointer, and that it is an ONNX model (exported with torch.onnx.export, tf2onnx or skl2onnx), not another format`;
  return invalidModel(`onnxruntime could not read ${name} (${reason}): ${check}`);
}
