"""Small configurations of torchvision models whose constructors take no size arguments, for
regenerate.sh and scripts/models (`--module small_models.NAME` with this directory on
PYTHONPATH). Same modules and ops as the full models, a fraction of the parameters."""
from torchvision.models import mobilenet_v3_large
from torchvision.models._utils import IntermediateLayerGetter
from torchvision.models.segmentation.lraspp import LRASPP
from torchvision.models.swin_transformer import SwinTransformer


def lraspp_small(num_classes=3):
    """lraspp_mobilenet_v3_large with its backbone at width 0.25 (dilated, as the full model) and
    a 16-channel head; the low and high features are taken where torchvision's builder takes them
    (the C2 and C5 stages)."""
    backbone = mobilenet_v3_large(width_mult=0.25, dilated=True).features
    stages = [0] + [i for i, b in enumerate(backbone) if getattr(b, "_is_cn", False)] + [len(backbone) - 1]
    low, high = stages[-4], stages[-1]
    layers = IntermediateLayerGetter(backbone, return_layers={str(low): "low", str(high): "high"})
    return LRASPP(layers, backbone[low].out_channels, backbone[high].out_channels, num_classes,
                  inter_channels=16)


def swin_small(num_classes=10):
    """swin_t's blocks (shifted windows with their attention mask, relative position bias read
    through index.Tensor, patch merging) at embed_dim 16 and two stages."""
    return SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 2],
                           window_size=[4, 4], num_classes=num_classes)


def resnet18_small(num_classes=10, width=4):
    """resnet18 (BasicBlock, [2, 2, 2, 2], torchvision's own forward and blocks) with its stages
    at width, 2x, 4x, 8x channels instead of 64 ... 512."""
    from torch import nn
    from torchvision.models.resnet import BasicBlock, ResNet
    m = ResNet(BasicBlock, [1, 1, 1, 1], num_classes=num_classes)
    m.inplanes = width
    m.conv1 = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
    m.bn1 = nn.BatchNorm2d(width)
    m.layer1 = m._make_layer(BasicBlock, width, 2)
    m.layer2 = m._make_layer(BasicBlock, 2 * width, 2, stride=2)
    m.layer3 = m._make_layer(BasicBlock, 4 * width, 2, stride=2)
    m.layer4 = m._make_layer(BasicBlock, 8 * width, 2, stride=2)
    m.fc = nn.Linear(8 * width, num_classes)
    return m


def efficientnet_b0_small(num_classes=10):
    """efficientnet_b0's MBConv stages (squeeze-excitation, SiLU, stochastic depth) at width and
    depth 0.25."""
    from torchvision.models.efficientnet import EfficientNet, _efficientnet_conf
    setting, last = _efficientnet_conf("efficientnet_b0", width_mult=0.25, depth_mult=0.25)
    return EfficientNet(setting, dropout=0.2, num_classes=num_classes, last_channel=last)


def densenet121_small(num_classes=10):
    """densenet121's dense blocks and transitions (concatenated features, bn-relu-conv) at growth
    rate 4, 8 initial features and one or two layers per block."""
    from torchvision.models.densenet import DenseNet
    return DenseNet(growth_rate=4, block_config=(2, 2, 2, 1), num_init_features=8, bn_size=2,
                    num_classes=num_classes)


def convnext_tiny_small(num_classes=10, stochastic_depth_prob=0.1):
    """convnext_tiny's blocks (7x7 depthwise conv, channels-last layer norm, GELU MLP, layer
    scale, stochastic depth) at 8 ... 64 channels, one block per stage."""
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    setting = [CNBlockConfig(8, 16, 1), CNBlockConfig(16, 32, 1), CNBlockConfig(32, 64, 1),
               CNBlockConfig(64, None, 1)]
    # layer_scale 0.1, not torchvision's 1e-6: at initialisation each block's branch would
    # otherwise be a millionth of the residual, and its gradients and dropping it would not show.
    return ConvNeXt(setting, stochastic_depth_prob=stochastic_depth_prob, layer_scale=0.1,
                    num_classes=num_classes)


def vit_small(num_classes=10):
    """vit_b_16's encoder (patchify conv, class token, position embedding, pre-norm attention
    blocks) on 32x32 images, 8x8 patches, 2 layers of width 16."""
    import torch
    from torchvision.models.vision_transformer import VisionTransformer
    m = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=16,
                          mlp_dim=32, dropout=0.1, num_classes=num_classes)
    # torchvision zeroes the head, which would leave every other gradient zero.
    torch.nn.init.normal_(m.heads.head.weight, std=0.5)
    return m
