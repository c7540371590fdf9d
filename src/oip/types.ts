/** The JSON of Open Inference Protocol v2 inference requests and responses (REST, and the binary extension's header). */

export interface V2Parameters {
  /** Binary extension: this tensor's bytes follow the header instead of `data`. */
  binary_data_size?: number;
  /** On a requested output: answer it in binary (true) or in `data` (false). */
  binary_data?: boolean;
  /** On the request: answer every output in binary unless it says otherwise. */
  binary_data_output?: boolean;
  [name: string]: unknown;
}

export interface V2Tensor {
  name: string;
  shape: number[];
  datatype: string;
  parameters?: V2Parameters;
  data?: unknown;
}

export interface V2InferRequest {
  id?: string;
  parameters?: V2Parameters;
  inputs: V2Tensor[];
  /** The outputs to answer (all when absent), each maybe with binary_data. */
  outputs?: Array<{ name: string; parameters?: V2Parameters }>;
}

export interface V2InferResponse {
  model_name: string;
  model_version?: string;
  id?: string;
  parameters?: V2Parameters;
  outputs: V2Tensor[];
}
