/* The ONNX rule tables, one per file: a new family is one line here and one file. No include
 * guard: onnx.h includes it with CLG_ONNX_RULES defined. */
CLG_ONNX_RULES(elem)   /* onnx_ops_elem.c: elementwise, activations, comparisons */
CLG_ONNX_RULES(nn)     /* onnx_ops_nn.c: Conv, pools, normalisations, Gemm, MatMul, Resize */
CLG_ONNX_RULES(array)  /* onnx_ops_array.c: shapes, Reshape, Concat, Slice, Gather, Pad, ... */
CLG_ONNX_RULES(reduce) /* onnx_ops_reduce.c: reductions, Softmax, ArgMax, Cast, TopK, ... */
CLG_ONNX_RULES(index)  /* onnx_ops_index.c: GatherElements, scatters, GatherND, OneHot, CumSum */
CLG_ONNX_RULES(rnn)    /* onnx_ops_rnn.c: RNN, GRU, LSTM unrolled over the sequence */
CLG_ONNX_RULES(nn2)    /* onnx_ops_nn2.c: Resize, Upsample, normalisations */
CLG_ONNX_RULES(conv)   /* onnx_ops_conv.c: ConvTranspose, 1-D conv and pools, Trilu, Hardmax, ... */
CLG_ONNX_RULES(loss)   /* onnx_ops_loss.c: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss */
CLG_ONNX_RULES(misc)  /* onnx_ops_misc.c: mixed-type Pow, integer Neg/Abs, windows, DFT, Det, ... */
CLG_ONNX_RULES(quant) /* onnx_ops_quant.c: integer MaxPool, MatMulInteger, ConvInteger, QLinear* */
