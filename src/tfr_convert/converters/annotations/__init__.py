"""Pictures with annotations: boxes (detection.py, box_formats/, label_map.py), instance
masks and keypoints (instances.py) and segmentation masks (segmentation.py).
"""
