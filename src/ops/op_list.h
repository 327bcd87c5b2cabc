/* Every op, once: CLG_OP(Name) for the definition clg_op_<Name> in its op file. Included
 * (with CLG_OP defined by the includer) by ops.h, which declares every definition, and by
 * registry.c, whose table follows this order (clg_op_at). The one place an op is
 * registered: an op file defines its clg_op_<Name>, adds its line here, and names any other
 * op's definition through ops.h. No include guard: each includer expands it its own way. */
CLG_OP(Const)       /* const.c */
CLG_OP(Placeholder) /* placeholder.c */
CLG_OP(MatMul)      /* matmul.c */
CLG_OP(Add)         /* binary.c */
CLG_OP(Sub)
CLG_OP(Mul)
CLG_OP(AddN)     /* add_n.c */
CLG_OP(Identity) /* identity.c */
CLG_OP(Relu)     /* relu.c */
CLG_OP(Neg)      /* math.c */
CLG_OP(Square)
CLG_OP(ReluGrad)   /* relu_grad.c */
CLG_OP(VariableV2) /* variable.c */
CLG_OP(NoOp)
CLG_OP(Floor)  /* math.c */
CLG_OP(Assign) /* assign.c */
CLG_OP(AssignAdd)
CLG_OP(AssignSub)
CLG_OP(ApplyGradientDescent)
CLG_OP(ApplyMomentum)
CLG_OP(RandomUniform) /* random.c */
CLG_OP(RandomStandardNormal)
CLG_OP(TruncatedNormal)
CLG_OP(ConstFill)
/* the CNN set */
CLG_OP(RealDiv) /* binary.c */
CLG_OP(Maximum)
CLG_OP(Equal)
CLG_OP(GreaterEqual)
CLG_OP(Select) /* select.c */
CLG_OP(Exp)    /* math.c */
CLG_OP(Log)
CLG_OP(Sqrt)
CLG_OP(Rsqrt)
CLG_OP(Cast) /* cast.c */
CLG_OP(Fill) /* fill.c */
CLG_OP(ZerosLike)
CLG_OP(OnesLike)
CLG_OP(Reshape) /* shape_ops.c */
CLG_OP(Transpose)
CLG_OP(Sum) /* reduce.c */
CLG_OP(Mean)
CLG_OP(Max)
CLG_OP(L2Loss)
CLG_OP(ArgMax)
CLG_OP(Softmax) /* softmax.c */
CLG_OP(LogSoftmax)
CLG_OP(SparseSoftmaxCrossEntropyWithLogits)
CLG_OP(InTopKV2)
CLG_OP(BiasAdd) /* nn.c */
CLG_OP(MaxPool)
CLG_OP(AvgPool)
CLG_OP(LRN)
CLG_OP(Conv2D) /* conv2d.c */
/* gradients */
CLG_OP(Conv2DBackpropInput) /* conv2d_grad.c */
CLG_OP(Conv2DBackpropFilter)
CLG_OP(MaxPoolGrad) /* nn_grad.c */
CLG_OP(AvgPoolGrad)
CLG_OP(LRNGrad)
CLG_OP(BiasAddGrad)
/* clusters */
CLG_OP(AllReduce) /* all_reduce.c */
/* TensorFlow graphs, 2 (issue 23) */
CLG_OP(StridedSlice) /* strided_slice.c */
CLG_OP(StridedSliceGrad)
CLG_OP(Pack) /* array_tf2.c */
CLG_OP(Shape)
CLG_OP(DepthToSpace)
CLG_OP(GatherV2)
CLG_OP(Range)
CLG_OP(Tile)
CLG_OP(Unpack)
CLG_OP(Split)
CLG_OP(SplitV)
/* TensorFlow graphs (issue 23) */
CLG_OP(Sigmoid) /* activation.c */
CLG_OP(Tanh)
CLG_OP(Relu6)
CLG_OP(LeakyRelu)
CLG_OP(Abs)
CLG_OP(Sign)
CLG_OP(SigmoidGrad)
CLG_OP(TanhGrad)
CLG_OP(Relu6Grad)
CLG_OP(LeakyReluGrad)
CLG_OP(AddV2) /* binary_tf.c */
CLG_OP(Minimum)
CLG_OP(Prelu)
CLG_OP(FloorDiv)
CLG_OP(FloorMod)
CLG_OP(Squeeze) /* array_tf.c */
CLG_OP(ExpandDims)
CLG_OP(Slice)
CLG_OP(Pad)
CLG_OP(PadV2)
CLG_OP(ConcatV2)
CLG_OP(DepthwiseConv2dNative) /* depthwise.c */
CLG_OP(DepthwiseConv2dNativeBackpropInput)
CLG_OP(DepthwiseConv2dNativeBackpropFilter)
CLG_OP(ResizeBilinear) /* resize.c */
CLG_OP(ResizeBilinearGrad)
CLG_OP(MirrorPad) /* array_tf.c */
CLG_OP(MirrorPadGrad)
/* ONNX import and tfjs graphs (issues 23, 24) */
CLG_OP(Less) /* binary.c */
CLG_OP(Greater)
CLG_OP(LessEqual)
CLG_OP(NotEqual)
CLG_OP(Pow)
CLG_OP(Atan2)
CLG_OP(LogicalAnd) /* logical.c */
CLG_OP(LogicalOr)
CLG_OP(LogicalNot)
CLG_OP(IsNan)
CLG_OP(IsInf)
CLG_OP(Erf) /* math_tf.c */
CLG_OP(Ceil)
CLG_OP(Round)
CLG_OP(Reciprocal)
CLG_OP(Sin)
CLG_OP(Cos)
CLG_OP(Tan)
CLG_OP(Asin)
CLG_OP(Acos)
CLG_OP(Atan)
CLG_OP(Sinh)
CLG_OP(Cosh)
CLG_OP(Asinh)
CLG_OP(Acosh)
CLG_OP(Atanh)
CLG_OP(Softplus)
CLG_OP(Softsign)
CLG_OP(Elu)
CLG_OP(Selu)
CLG_OP(SelectV2) /* broadcast_ops.c */
CLG_OP(BroadcastTo)
/* ONNX import and tfjs graphs, 4 (issues 23, 24) */
CLG_OP(Min) /* reduce.c */
CLG_OP(Prod)
CLG_OP(ArgMin)
CLG_OP(BatchMatMulV2)         /* batch_matmul.c */
CLG_OP(ResizeNearestNeighbor) /* resize.c */
CLG_OP(GatherNd)              /* array_tf3.c */
CLG_OP(ScatterNd)
CLG_OP(OneHot)
CLG_OP(ReverseV2)
CLG_OP(Cumsum)
CLG_OP(TopKV2)
CLG_OP(Einsum) /* einsum.c */
/* tfjs graphs, 5 (issue 23) */
CLG_OP(SquaredDifference) /* binary_tf.c */
CLG_OP(Size)              /* array_tf4.c */
CLG_OP(SparseToDense)
CLG_OP(SpaceToBatchND) /* space_batch.c */
CLG_OP(BatchToSpaceND)
CLG_OP(Switch) /* control.c */
CLG_OP(Merge)
/* integer bit shifts (the ONNX suite's BitShift) */
CLG_OP(LeftShift) /* binary_tf.c */
CLG_OP(RightShift)
