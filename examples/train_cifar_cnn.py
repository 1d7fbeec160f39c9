"""A small CNN on tfr-convert's CIFAR output, fed by tfr_convert.load() (tf.data, no hand-written parse spec).

    tfr-convert cifar SRC --out DATASET
    python examples/train_cifar_cnn.py DATASET [--epochs 10] [--batch-size 64]

Works for CIFAR-10 and CIFAR-100 (fine labels). Prints the test accuracy.
"""

from __future__ import annotations

import argparse
import json
import os

import tensorflow as tf

import tfr_convert


def scale(image, label):
    return tf.cast(image, tf.float32) / 255.0, label


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    tf.keras.utils.set_random_seed(0)

    with open(os.path.join(args.dataset, "features.json")) as f:
        classes = int(json.load(f)["featuresDict"]["features"]["label_index"]["classLabel"]["numClasses"])
    load = dict(as_supervised=True, label="label_index")
    train = tfr_convert.load(args.dataset, "train", shuffle_buffer=10_000, seed=0, **load)
    test = tfr_convert.load(args.dataset, "test", **load)
    train = train.map(scale).batch(args.batch_size).prefetch(tf.data.AUTOTUNE)
    test = test.map(scale).batch(256)

    model = tf.keras.Sequential(
        [
            tf.keras.Input(shape=(32, 32, 3)),
            tf.keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
            tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
            tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(128, activation="relu"),
            tf.keras.layers.Dense(classes),
        ]
    )
    model.compile(
        optimizer="adam",
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    model.fit(train, epochs=args.epochs, verbose=2)
    _, accuracy = model.evaluate(test, verbose=0)
    print(f"test accuracy: {accuracy:.4f}")


if __name__ == "__main__":
    main()
