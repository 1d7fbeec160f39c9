"""What each kind of feature holds, read from records for --stats, --grid and the report: boxes, masks, keypoints, clips' frames, recordings' waveforms, value distributions."""
