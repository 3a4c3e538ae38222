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
