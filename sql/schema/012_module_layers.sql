-- Schema v12: layers from the model's own module frames. A trace recorded with module frames
-- (nn.Module: BertLayer_3) names its layers itself; each kernel stores which rule gave its layer
-- and, for a module layer, the module.
ALTER TABLE kernel_facts ADD COLUMN layer_source VARCHAR;

ALTER TABLE kernel_facts ADD COLUMN layer_module VARCHAR;

COMMENT ON COLUMN kernel_facts.layer_source IS 'the rule that gave the layer: module (the model''s repeated layer module frames), marker (attention/SSM marker kernels) or correlation (large correlation groups); NULL outside layers';

COMMENT ON COLUMN kernel_facts.layer_module IS 'the layer''s module as the trace names it (BertLayer_3) for a module layer; NULL otherwise';

COMMENT ON TABLE runtime_calls IS 'runtime and driver API calls of every device Kineto records (categories cuda_runtime and cuda_driver, which ROCm uses for hip* calls too; mtia_runtime, xpu_runtime, xpu_driver, privateuse1_runtime, privateuse1_driver, glow_runtime)';

COMMENT ON COLUMN runtime_calls.cat IS 'the category: cuda_runtime, cuda_driver, mtia_runtime, xpu_runtime, xpu_driver, privateuse1_runtime, privateuse1_driver or glow_runtime';
