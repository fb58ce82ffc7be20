import logging

logger = logging.getLogger(__name__)
