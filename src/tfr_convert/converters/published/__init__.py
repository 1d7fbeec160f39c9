"""The datasets people download as their authors publish them: MNIST-family idx files
(mnist.py, emnist.py, idx.py) and CIFAR pickles or binaries (cifar.py, cifar_files.py,
safe_pickle.py).
"""
